/**
 * The view at fleet scale: what its server does when the fleet moves, and what a page gets.
 * - indexing the fleet for pages (`indexFleet`: core's read model plus the view's index and
 *   summary) at 1,000 and 10,000 nodes × 5 modules, against core's `readFleet` alone on the same
 *   state: the view's own cost on top of the read model;
 * - one grid page of 50 nodes, against indexing (a page must cost a sliver of it);
 * - the bytes a page gets first (the summary and one grid page), against every entry of the
 *   per-node sources, which is what a page got before decision 0061.
 */
import { readFleet } from "@mesh/core";
import type { Assignment, Have, ModuleRegistration, Presence, Want } from "@mesh/protocol";
import { gridPage, gridQuery, indexFleet, type FleetInput } from "@mesh/view";
import { line, quantile, timeEach } from "./measure.js";

const MODULES = ["board", "counter", "hello", "node-tools", "store"];
const FLEETS = [1_000, 10_000];
const RUNS = 5;

function fleet(nodes: number): FleetInput {
  const now = Date.now();
  const at = new Date(now).toISOString();
  const by = { by: "ada", at };
  const registration = (module: string): ModuleRegistration => ({
    module,
    source: { kind: "directory", path: `/src/${module}` },
    ...by,
  });
  const input = {
    now,
    registrations: new Map(MODULES.map((m) => [m, registration(m)])),
    presence: new Map<string, Presence>(),
    assignments: new Map<string, Assignment>(MODULES.map((m) => [`all.${m}`, by])),
    builds: new Map(),
    wants: new Map<string, Want>(),
    have: new Map<string, Have>(),
    differences: new Map(),
    compositions: new Map(),
    asks: new Map(),
    answers: new Map(),
    conditions: [],
    puts: new Map(),
  } satisfies FleetInput;
  for (let i = 0; i < nodes; i += 1) {
    const node = `n-${String(i).padStart(5, "0")}`;
    input.presence.set(node, {
      node,
      facts: { hostname: `${node}.local`, os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
      heartbeat: at,
    });
    for (const module of MODULES) {
      const key = `${node}.${module}`;
      const build = "1-0123abcd";
      input.wants.set(key, {
        build,
        manifestDigest: "d".repeat(64),
        fingerprint: "f".repeat(16),
        rule: "newest",
        reason: `the build of ${module}'s newest candidate (1)`,
      });
      input.have.set(key, {
        build,
        fingerprint: "f".repeat(16),
        health: i % 97 === 0 ? "failing" : "healthy",
        since: at,
        restarts: 0,
      });
    }
  }
  return input;
}

const median = (values: readonly number[]): number => quantile(values, 0.5);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

for (const nodes of FLEETS) {
  const input = fleet(nodes);
  gc();
  const readModel = median(await timeEach(RUNS, () => void readFleet(input)));
  gc();
  const indexing = median(await timeEach(RUNS, () => void indexFleet(input, 1)));
  const index = indexFleet(input, 1);
  const query = gridQuery(new URLSearchParams("count=50"));
  const paging = median(await timeEach(RUNS * 4, () => void gridPage(input, index, query)));
  console.log(`${nodes} nodes × ${MODULES.length} modules`);
  console.log(
    line("  indexing for pages (median)", indexing, "ms", {
      what: "core's readFleet alone",
      value: readModel,
    }),
  );
  console.log(
    line("  one 50-node grid page (median)", paging, "ms", {
      what: "indexing",
      value: indexing,
    }),
  );
  const first =
    JSON.stringify(index.summary).length + JSON.stringify(gridPage(input, index, query)).length;
  const every = JSON.stringify({
    presence: Object.fromEntries(input.presence),
    wants: Object.fromEntries(input.wants),
    have: Object.fromEntries(input.have),
  }).length;
  console.log(
    line("  a page's first bytes (summary + one grid page)", first / 1024, "KiB", {
      what: "every per-node entry",
      value: every / 1024,
    }),
  );
}
