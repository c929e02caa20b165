/**
 * The view as an operator's console at 1,000 nodes × 20 modules, in headless Chromium against a
 * real bus (issue 26): from opening the page to its grid drawn (first paint); from asking for a
 * module's logs on every node to the newest page shown (with 100,000 lines kept in `mesh-logs`,
 * half of them the module's); and from a line written to its showing in the live tail. Each
 * against the same on a 10-node × 2-module mesh measured in the same run. Median of 3.
 */
import { KvBucket, MeshBus, ensureLayout, flush, publish } from "@mesh/bus";
import { credentialFor, startTestServer, type TestServer } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { Bucket, Principal, logsSubject, nodeKey, nodeModuleKey } from "@mesh/protocol";
import { startView } from "@mesh/view";
import { launch, pageOf } from "@mesh/view/testing";
import { line, quantile, timeEach } from "./measure.js";

const RUNS = 3;
const OPERATOR = { user: "operator", password: "operator-password-for-bench" };

interface Figures {
  readonly paint: number;
  readonly logs: number;
  readonly tail: number;
}

async function seed(admin: MeshBus, nodes: number, modules: number, lines: number): Promise<void> {
  const at = new Date().toISOString();
  const open = <B extends Bucket>(b: B) => KvBucket.open(admin, b);
  const [presence, registry, wants, have, assignments] = await Promise.all([
    open(Bucket.presence),
    open(Bucket.modules),
    open(Bucket.wants),
    open(Bucket.have),
    open(Bucket.assignments),
  ]);
  const names = Array.from({ length: modules }, (_, i) => `mod-${String(i).padStart(2, "0")}`);
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

async function measure(nodes: number, modules: number, lines: number): Promise<Figures> {
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
    await seed(admin, nodes, modules, lines);
    await using view = await startView({ bus: operator });
    await view.state.ready;
    const errors: string[] = [];
    const figures: Figures[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const page = await pageOf(browser, errors, 60_000);
      const [paint] = await timeEach(1, async () => {
        await page.goto(view.url);
        await page.waitForSelector("body[data-ready] td.cell");
      });
      const [logs] = await timeEach(1, async () => {
        await page.locator("td.cell").first().click();
        await page.locator('[data-open="logs-all"]').click();
        await page.locator("#log-lines .log-line[data-seq]").first().waitFor();
      });
      await page.locator('[data-log-status="live"]').waitFor();
      const [tail] = await timeEach(1, async () => {
        publish(admin, logsSubject("n-0000", "mod-00"), {
          process: "main",
          stream: "stdout",
          line: `tail ${run}`,
          at: new Date().toISOString(),
        });
        await page.locator("#log-lines .log-line", { hasText: `tail ${run}` }).waitFor();
      });
      figures.push({ paint: paint ?? NaN, logs: logs ?? NaN, tail: tail ?? NaN });
      await page.context().close();
    }
    if (errors.length > 0) throw new Error(`errors on the page: ${errors.join("; ")}`);
    const median = (pick: (f: Figures) => number): number => quantile(figures.map(pick), 0.5);
    return {
      paint: median((f) => f.paint),
      logs: median((f) => f.logs),
      tail: median((f) => f.tail),
    };
  } finally {
    await browser.close();
    await operator.close();
    await admin.close();
    await server.stop();
  }
}

const small = await measure(10, 2, 1_000);
const large = await measure(1_000, 20, 100_000);
console.log(
  "1,000 nodes × 20 modules, 100,000 log lines kept; median of 3 (baseline: 10 nodes × 2 modules, 1,000 lines)",
);
console.log(
  `  ${line("first paint (open → grid drawn)", large.paint, "ms", { what: "small mesh", value: small.paint })}`,
);
console.log(
  `  ${line("a module's logs on every node (ask → newest page shown)", large.logs, "ms", { what: "small mesh", value: small.logs })}`,
);
console.log(
  `  ${line("log tail (line written → shown)", large.tail, "ms", { what: "small mesh", value: small.tail })}`,
);
