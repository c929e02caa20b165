/**
 * What the assigner's tests on a real bus share: the bus (the assigner's and the operator's users,
 * the admin's connection), the fleet seeded on it, an assigner run in this process or as its own.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { KvBucket, MeshBus, conditionsSource, readStanding } from "@mesh/bus";
import { credentialFor, deadline, startTestServer, type TestServer } from "@mesh/bus/testing";
import { hostGrant, operatorGrant } from "@mesh/core";
import type { Condition } from "@mesh/protocol";
import { Bucket, Principal, moduleConditionsWildcard, type Credential } from "@mesh/protocol";
import { partsPrincipalGrant } from "../parts.js";
import { Assigner, type PassReport } from "./assigner.js";
import { NODE, T0, addHelloBuild, emptyLayout, seedFleet } from "./test-fleet.js";

const password = "assigner-password-for-tests";

/** The test file's bus, started before its tests and stopped after them. */
export interface AssignerBus {
  readonly server: TestServer;
  /** The admin's connection, for seeding and reading back. */
  readonly admin: MeshBus;
  /** The login of a principal with its own grant (the assigner's or the operator's). */
  credential(principal: typeof Principal.assigner | typeof Principal.operator): Credential;
  /** The login of a node's host (one of `hosts`). */
  hostCredential(node: string): Credential;
  /** Every bucket emptied, the layout made again. */
  freshLayout(): Promise<void>;
  /**
   * The fleet seeded: `nodes` nodes present with hello (or `module`) assigned to all, `builds`
   * builds of it.
   */
  seed(options: Parameters<typeof seedFleet>[1]): Promise<string[]>;
  addBuild(seq: number): Promise<string>;
  wants(): ReturnType<typeof KvBucket.open<typeof Bucket.wants>>;
  /** Runs an assigner in this process on the assigner's grant until the returned stop is called. */
  startAssigner(options?: Parameters<typeof startAssigner>[1]): ReturnType<typeof startAssigner>;
  /** The last condition the assigner said under a name, as the stream keeps it. */
  lastCondition(name: string): Promise<Condition | undefined>;
  /** What n1's host reports of hello: `build` healthy or failing; the revision of the write. */
  report(build: string, health: "healthy" | "failing"): Promise<number>;
}

/**
 * Registers the file's before and after hooks; the bus is there once the tests run. `hosts`
 * adds a host's user for each node (`host-<node>`, on `hostGrant`), for simulated hosts.
 */
export function assignerBus(options: { hosts?: readonly string[] } = {}): AssignerBus {
  let server: TestServer | undefined;
  let admin: MeshBus | undefined;
  before(async () => {
    server = await startTestServer({
      users: [
        {
          user: "assigner",
          password,
          permissions: await partsPrincipalGrant(Principal.assigner, { node: NODE }),
        },
        { user: "operator", password, permissions: operatorGrant({ node: NODE }) },
        ...(options.hosts ?? []).map((node) => ({
          user: `host-${node}`,
          password,
          permissions: hostGrant({ node }),
        })),
      ],
    });
    admin = await MeshBus.connect(
      credentialFor(server, server.admin, { node: NODE, module: Principal.controller }),
    );
  });
  after(async () => {
    await admin?.close();
    await server?.stop();
  });
  const started = (): { server: TestServer; admin: MeshBus } => {
    if (server === undefined || admin === undefined) throw new Error("the bus is not started");
    return { server, admin };
  };
  const credential: AssignerBus["credential"] = (principal) =>
    credentialFor(
      started().server,
      { user: principal, password },
      { node: NODE, module: principal },
    );
  return {
    get server() {
      return started().server;
    },
    get admin() {
      return started().admin;
    },
    credential,
    hostCredential: (node) =>
      credentialFor(
        started().server,
        { user: `host-${node}`, password },
        { node, module: Principal.host },
      ),
    freshLayout: () => emptyLayout(started().admin),
    seed: (options) => seedFleet(started().admin, options),
    addBuild: (seq) => addHelloBuild(started().admin, seq),
    wants: () => KvBucket.open(started().admin, Bucket.wants),
    startAssigner: (options) => startAssigner(credential(Principal.assigner), options),
    lastCondition: (name) => lastCondition(started().admin, name),
    report: async (build, health) =>
      (await KvBucket.open(started().admin, Bucket.have)).put("n1.hello", {
        build,
        fingerprint: "f",
        health,
        since: T0,
        restarts: 0,
      }),
  };
}

/** Runs an assigner in this process until the returned stop is called. */
async function startAssigner(
  credential: Credential,
  options: { putsReopenIntervalMs?: number; log?: (line: string) => void } = {},
) {
  const bus = await MeshBus.connect(credential);
  const passes: PassReport[] = [];
  /** When each pass ended (Date.now), by its place in `passes`. */
  const passedAt: number[] = [];
  const waiters: Array<() => void> = [];
  const assigner = await Assigner.create({
    bus,
    ...(process.env.MESH_TEST_LOG === "1" ? { log: (l: string) => console.error(l) } : {}),
    ...options,
    onPass: (p) => {
      passes.push(p);
      passedAt.push(Date.now());
      for (const w of waiters.splice(0)) w();
    },
  });
  const stop = new AbortController();
  const running = assigner.run({ signal: stop.signal });
  running.catch(() => undefined);
  /** Stops it and closes its connection; harmless twice. */
  const halt = async (): Promise<void> => {
    stop.abort();
    await running.catch(() => undefined);
    await bus.close();
  };
  return {
    assigner,
    passes,
    passedAt,
    running,
    /** Resolves once a pass satisfies `test` (checked after each pass). */
    async until(test: () => Promise<boolean> | boolean, what: string): Promise<void> {
      await deadline(
        (async () => {
          // The waiter is registered before the check, so a pass that ends while the check
          // reads the bus still wakes it (registering after the check lost that wake-up).
          for (;;) {
            const passed = new Promise<void>((r) => waiters.push(r));
            if (await test()) return;
            await passed;
          }
        })(),
        // Generous: a deadline catches a hang, never a slow machine.
        180_000,
        what,
      );
    },
    stop: halt,
    [Symbol.asyncDispose]: halt,
  };
}

/** The last condition the assigner said under a name, as the stream keeps it. */
async function lastCondition(admin: MeshBus, name: string): Promise<Condition | undefined> {
  const filter = `${moduleConditionsWildcard(Principal.assigner).slice(0, -1)}${name}`;
  const kept = await readStanding(conditionsSource(admin, { filter, deliver: "last-per-subject" }));
  return [...kept.values()][0];
}

/** Starts `mesh assigner` as its own process on the assigner's credential file. */
export function startAssignerProcess(credential: string) {
  const main = fileURLToPath(new URL("../main.js", import.meta.url));
  const child = spawn(process.execPath, [main, "assigner", "--credential", credential], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const lines = createInterface({ input: child.stderr });
  /** Each pass it logged, in order. */
  const passes: string[] = [];
  lines.on("line", (line) => {
    if (/pass \d+:/.test(line)) passes.push(line);
  });
  const firstPass = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => {
      if (/pass 1:/.test(line)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the assigner exited with ${code}`)));
  });
  firstPass.catch(() => undefined);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    child,
    firstPass,
    passes,
    /** Stops it by its pid (SIGKILL: nothing of it is left to run). */
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid as number, "SIGKILL");
      }
      await exited;
    },
  };
}
