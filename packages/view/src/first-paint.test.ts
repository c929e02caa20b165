/**
 * The view's first paint from the assigner's summary and its grid page's keys (decision 0090)
 * shows what the view shows once its mirror holds every bucket: the same state, summary and grid
 * pages. A real bus with the operator's grant.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KvBucket } from "@mesh/bus";
import { summarizeFleet, type FleetState } from "@mesh/core";
import { Bucket, SUMMARY_KEY, type Build, type Condition } from "@mesh/protocol";
import { Source, type GridPage, type Snapshot } from "./browser/wire.js";
import { FirstPaint } from "./first-paint.js";
import { startView, type View } from "./start-view.js";
import { seedMesh, startTestMesh, type TestMesh } from "./test-support.js";

let mesh: TestMesh;
let view: View;
const stop = new AbortController();

before(async () => {
  mesh = await startTestMesh();
  await seedMesh(mesh.admin);
  view = await startView({ bus: mesh.operator, actor: "ada" });
  await view.state.ready;
});
after(async () => {
  stop.abort();
  await view?.close();
  await mesh?.stop();
});

/** The fleet's state as the view's mirror holds it, for the summary the assigner would write. */
function stateOf(now: number): FleetState {
  const map = <T>(source: Source) => view.state.entries(source) as ReadonlyMap<string, T>;
  const builds = new Map(
    [...map<Build>(Source.builds).keys()].map((key) => [
      key,
      { ...(view.state.get(Source.builds, key) as Build), log: view.state.buildLog(key) ?? "" },
    ]),
  );
  return {
    now,
    presence: map(Source.presence),
    assignments: map(Source.assignments),
    registrations: map(Source.modules),
    builds,
    wants: map(Source.wants),
    have: map(Source.have),
    differences: map(Source.differences),
    compositions: map(Source.compositions),
    asks: map(Source.asks),
    answers: map(Source.answers),
    conditions: [...map<Condition>(Source.conditions).values()],
  };
}

const get = async <T>(path: string): Promise<T> => (await fetch(`${view.url}${path}`)).json() as T;

describe("the view's first paint from the summary", () => {
  it("without a summary there is no first paint: the page waits for the mirror", async () => {
    const first = new FirstPaint({ bus: mesh.operator, signal: stop.signal, above: 0 });
    assert.equal(await first.state(), undefined);
    assert.equal(await first.grid({ from: 0, count: 50, filter: "", attention: false }), undefined);
  });

  it("its state and grid pages are those of the view with every bucket", async () => {
    const now = new Date();
    const summary = summarizeFleet(stateOf(now.getTime()));
    await (await KvBucket.open(mesh.admin, Bucket.summary)).put(SUMMARY_KEY, summary);
    const small = new FirstPaint({ bus: mesh.operator, signal: stop.signal });
    assert.equal(await small.state(), undefined, "a small fleet waits for the mirror");
    const first = new FirstPaint({ bus: mesh.operator, signal: stop.signal, above: 0 });

    const state = (await first.state(now)) as Snapshot;
    const whole = await get<Snapshot>("api/state");
    assert.deepEqual(state.entries, whole.entries);
    const { version: _v, ...fleet } = state.fleet;
    const { version: _w, ...wholeFleet } = whole.fleet;
    assert.deepEqual(fleet, wholeFleet);

    for (const query of [
      { from: 0, count: 50, filter: "", attention: false },
      { from: 1, count: 1, filter: "", attention: false },
      { from: 0, count: 50, filter: "hello", attention: false },
      { from: 0, count: 50, filter: "rack", attention: false },
    ]) {
      const page = (await first.grid(query, now)) as GridPage;
      const params = new URLSearchParams({
        from: String(query.from),
        count: String(query.count),
        filter: query.filter,
      });
      const wholePage = await get<GridPage>(`api/grid?${params.toString()}`);
      const { version: _a, at: _b, ...shown } = page;
      const { version: _c, at: _d, ...wholeShown } = wholePage;
      assert.deepEqual(shown, wholeShown, JSON.stringify(query));
      assert.ok(Object.keys(page.cells).length > 0 || query.filter === "rack");
    }
  });
});
