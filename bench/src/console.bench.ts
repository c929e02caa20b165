/**
 * The view as an operator's console at 1,000 nodes × 20 modules, in headless Chromium against a
 * real bus (issue 26): from opening the page to its grid and its rollouts panel drawn (first
 * paint; every module has a rollout under way); from asking for a module's logs on every node to
 * the newest page shown (with 100,000 lines kept in `mesh-logs`, half of them the module's); from
 * a line written to its showing in the live tail; from asking for a cell's history to the
 * module's timeline and health plot drawn (from have's history on every node); and from asking
 * for a rollout's progress to its plot drawn. Each against the same on a 10-node × 2-module mesh
 * measured in the same run, and the first paint also against the large mesh with no rollout (what
 * the rollouts panel adds). Median of 3.
 */
import { KvBucket, MeshBus, ensureLayout, flush, publish } from "@mesh/bus";
import { credentialFor, startTestServer, type TestServer } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { Bucket, Principal, logsSubject, nodeKey, nodeModuleKey } from "@mesh/protocol";
import { startView } from "@mesh/view";
import { launch, pageOf } from "@mesh/view/testing";
import type { Page } from "playwright-core";
import { line, quantile, timeEach } from "./measure.js";

const RUNS = 3;
const OPERATOR = { user: "operator", password: "operator-password-for-bench" };

interface Figures {
  readonly paint: number;
  readonly logs: number;
  readonly tail: number;
  readonly history: number;
  readonly progress: number;
}

/** Each module's rollout under way, as the assigner records it: wave 3 of 11 of its nodes. */
function rolloutOf(module: string, nodes: readonly string[], at: string) {
  const batch = Math.max(1, Math.ceil(nodes.length / 10));
  return {
    module,
    build: "2-0123abcd",
    from: ["1-0123abcd"],
    attempt: 1,
    status: "rolling" as const,
    wave: 3,
    waves: 11,
    admitted: nodes.slice(0, 1 + 2 * batch),
    waveNodes: nodes.slice(1 + batch, 1 + 2 * batch),
    waveAt: at,
    policy: {
      canary: 1,
      batch,
      minHealthyMs: 30_000,
      healthyDeadlineMs: 300_000,
      maxFailing: 0,
      pauseAfterCanary: false,
      order: "name",
      source: "default" as const,
    },
    waiting: `wave 3 of 11: each runs 2-0123abcd healthy for 30s`,
  };
}

/** A mesh to measure: its size, and whether every module has a rollout under way. */
interface Shape {
  readonly nodes: number;
  readonly modules: number;
  readonly lines: number;
  readonly rollouts: boolean;
}

async function seed(admin: MeshBus, shape: Shape): Promise<void> {
  const { nodes, modules, lines } = shape;
  const at = new Date().toISOString();
  const open = <B extends Bucket>(b: B) => KvBucket.open(admin, b);
  const [presence, registry, wants, have, assignments, rollouts] = await Promise.all([
    open(Bucket.presence),
    open(Bucket.modules),
    open(Bucket.wants),
    open(Bucket.have),
    open(Bucket.assignments),
    open(Bucket.rollouts),
  ]);
  const names = Array.from({ length: modules }, (_, i) => `mod-${String(i).padStart(2, "0")}`);
  const nodeNames = Array.from({ length: nodes }, (_, n) => `n-${String(n).padStart(4, "0")}`);
  if (shape.rollouts)
    for (const module of names) await rollouts.put(module, rolloutOf(module, nodeNames, at));
  for (const module of names) {
    await registry.put(module, {
      module,
      source: { kind: "directory", path: `/src/${module}` },
      by: "ada",
      at,
    });
    await assignments.put(`all.${module}`, { by: "ada", at });
  }
  const writes: Array<Promise<unknown>> = [];
  const drain = async (): Promise<void> => {
    await Promise.all(writes.splice(0));
  };
  for (let n = 0; n < nodes; n += 1) {
    const node = `n-${String(n).padStart(4, "0")}`;
    writes.push(
      presence.put(nodeKey(node), {
        node,
        facts: { hostname: `${node}.local`, os: "linux", arch: "x64", version: "0.1.0" },
        publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
        heartbeat: at,
      }),
    );
    for (const module of names) {
      const key = nodeModuleKey(node, module);
      const want = {
        build: "1-0123abcd",
        manifestDigest: "d".repeat(64),
        fingerprint: "f".repeat(16),
        rule: "newest" as const,
        reason: "newest (1)",
      };
      writes.push(wants.put(key, want));
      writes.push(
        have.put(key, {
          build: "1-0123abcd",
          fingerprint: "f".repeat(16),
          health: "healthy",
          since: at,
          restarts: 0,
        }),
      );
    }
    if (writes.length > 2_000) await drain();
  }
  await drain();
  // Half the lines are the first module's, spread over the nodes; the rest another module's.
  for (let i = 0; i < lines; i += 1) {
    const node = `n-${String(i % nodes).padStart(4, "0")}`;
    const module = i % 2 === 0 ? (names[0] ?? "mod-00") : (names[1 % modules] ?? "mod-00");
    publish(admin, logsSubject(node, module), {
      process: "main",
      stream: "stdout",
      line: `line ${i} of ${module}`,
      at,
    });
    if (i % 5_000 === 4_999) await flush(admin);
  }
  await flush(admin);
}

/** One page's figures: first paint, logs, tail, a cell's history, a rollout's progress. */
async function onePage(
  page: Page,
  admin: MeshBus,
  url: string,
  run: number,
  rollouts: boolean,
): Promise<Figures> {
  const time = async (fn: () => Promise<void>): Promise<number> =>
    (await timeEach(1, fn))[0] ?? Number.NaN;
  const paint = await time(async () => {
    await page.goto(url);
    await page.waitForSelector("body[data-ready] td.cell");
    if (rollouts) await page.waitForSelector('#rollouts tr[data-rollout="mod-00"]');
  });
  const logs = await time(async () => {
    await page.locator("td.cell").first().click();
    await page.locator('[data-open="logs-all"]').click();
    await page.locator("#log-lines .log-line[data-seq]").first().waitFor();
  });
  await page.locator('[data-log-status="live"]').waitFor();
  const tail = await time(async () => {
    publish(admin, logsSubject("n-0000", "mod-00"), {
      process: "main",
      stream: "stdout",
      line: `tail ${run}`,
      at: new Date().toISOString(),
    });
    await page.locator("#log-lines .log-line", { hasText: `tail ${run}` }).waitFor();
  });
  const history = await time(async () => {
    await page.locator('[data-open="history"]').click();
    await page.locator("#history #health-plot").waitFor();
  });
  const progress = !rollouts
    ? Number.NaN
    : await time(async () => {
        await page.locator('[data-rollout-progress="mod-00"]').click();
        await page.locator('svg[data-rollout-plot="mod-00"]').waitFor();
      });
  return { paint, logs, tail, history, progress };
}

async function measure(shape: Shape): Promise<Figures> {
  const server: TestServer = await startTestServer({
    users: [{ ...OPERATOR, permissions: operatorGrant({ node: "laptop" }) }],
  });
  const admin = await MeshBus.connect(
    credentialFor(server, server.admin, { node: "laptop", module: Principal.controller }),
  );
  await ensureLayout(admin);
  const operator = await MeshBus.connect(
    credentialFor(server, OPERATOR, { node: "laptop", module: Principal.operator }),
  );
  const browser = await launch();
  try {
    await seed(admin, shape);
    await using view = await startView({ bus: operator });
    await view.state.ready;
    const errors: string[] = [];
    const figures: Figures[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const page = await pageOf(browser, errors, 60_000);
      figures.push(await onePage(page, admin, view.url, run, shape.rollouts));
      await page.context().close();
    }
    if (errors.length > 0) throw new Error(`errors on the page: ${errors.join("; ")}`);
    const median = (pick: (f: Figures) => number): number => quantile(figures.map(pick), 0.5);
    return {
      paint: median((f) => f.paint),
      logs: median((f) => f.logs),
      tail: median((f) => f.tail),
      history: median((f) => f.history),
      progress: median((f) => f.progress),
    };
  } finally {
    await browser.close();
    await operator.close();
    await admin.close();
    await server.stop();
  }
}

const small = await measure({ nodes: 10, modules: 2, lines: 1_000, rollouts: true });
const large = await measure({ nodes: 1_000, modules: 20, lines: 100_000, rollouts: true });
const bare = await measure({ nodes: 1_000, modules: 20, lines: 100_000, rollouts: false });
console.log(
  "1,000 nodes × 20 modules, 100,000 log lines kept, 20 rollouts; median of 3 (baseline: 10 nodes × 2 modules, 1,000 lines)",
);
console.log(
  `  ${line("first paint (open → grid and rollouts panel drawn)", large.paint, "ms", { what: "small mesh", value: small.paint })}`,
);
console.log(
  `  ${line("first paint beside the same mesh with no rollout", large.paint, "ms", { what: "no rollout", value: bare.paint })}`,
);
console.log(
  `  ${line("a module's logs on every node (ask → newest page shown)", large.logs, "ms", { what: "small mesh", value: small.logs })}`,
);
console.log(
  `  ${line("log tail (line written → shown)", large.tail, "ms", { what: "small mesh", value: small.tail })}`,
);
console.log(
  `  ${line("a cell's history (ask → timeline and health plot drawn)", large.history, "ms", { what: "small mesh", value: small.history })}`,
);
console.log(
  `  ${line("a rollout's progress (ask → plot drawn)", large.progress, "ms", { what: "small mesh", value: small.progress })}`,
);
