/**
 * The server's event stream: the state first (again after every reconnect), then each change of
 * a page source, the fleet's summary when it moved, a source's problem, and the bus's state.
 */
import { loadCanaries, loadGrid, loadTools, scheduleToolRefresh } from "./api.js";
import { ALL_SECTIONS, SECTIONS_OF, invalidate, model } from "./model.js";
import {
  Source,
  ViewEvent,
  type BusState,
  type Change,
  type FleetSummary,
  type Snapshot,
  type SourceProblem,
} from "./wire.js";

const data = <T>(event: Event): T => JSON.parse((event as MessageEvent<string>).data) as T;

export function connect(): void {
  const events = new EventSource("/api/events");
  events.addEventListener(ViewEvent.snapshot, (event) => onSnapshot(data<Snapshot>(event)));
  events.addEventListener(ViewEvent.change, (event) => onChange(data<Change>(event)));
  events.addEventListener(ViewEvent.fleet, (event) => onFleet(data<FleetSummary>(event)));
  events.addEventListener(ViewEvent.problem, (event) => {
    const problem = data<SourceProblem>(event);
    if (problem.problem === undefined) model.problems.delete(problem.source);
    else model.problems.set(problem.source, problem.problem);
    invalidate("summary");
  });
  events.addEventListener(ViewEvent.bus, (event) => {
    model.bus = data<{ bus: BusState }>(event).bus;
    invalidate("summary");
  });
  events.addEventListener("error", () => {
    // EventSource reconnects by itself and the server sends the whole state again.
    model.link = events.readyState === EventSource.CLOSED ? "lost" : "connecting";
    invalidate("summary");
  });
}

function onSnapshot(snapshot: Snapshot): void {
  model.skewMs = Date.parse(snapshot.at) - Date.now();
  for (const source of Object.values(Source)) {
    model.entries.set(source, new Map(Object.entries(snapshot.entries[source] ?? {})));
  }
  model.fleet = snapshot.fleet;
  model.problems = new Map(Object.entries(snapshot.problems) as Array<[Source, string]>);
  model.bus = snapshot.bus;
  model.link = "live";
  model.lastChange = new Date();
  invalidate(...ALL_SECTIONS);
  void loadGrid();
  void loadTools();
  void loadCanaries();
}

function onFleet(summary: FleetSummary): void {
  const before = model.fleet?.cells;
  model.fleet = summary;
  model.lastChange = new Date();
  invalidate("summary", "differences");
  if (model.grid?.version !== summary.version) void loadGrid();
  // A canary's health is a cell of the fleet: it moves with it.
  void loadCanaries();
  // A module starting or stopping somewhere may add or remove its tools.
  const { healthy, starting, notRunning } = summary.cells;
  if (
    before?.healthy !== healthy ||
    before.starting !== starting ||
    before.notRunning !== notRunning
  ) {
    scheduleToolRefresh();
  }
}

function onChange(change: Change): void {
  const map = model.entries.get(change.source);
  if (map === undefined) return;
  if (change.value === undefined) map.delete(change.key);
  else map.set(change.key, change.value);
  model.lastChange = new Date();
  invalidate(...(SECTIONS_OF[change.source] ?? []));
  if (change.source === Source.rollouts) void loadCanaries();
}
