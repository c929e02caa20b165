/**
 * Issue 14.6: an unreachable provisioner client (no responders: its host restarting) is not a
 * refusal. A watch hands nothing and asks again on the client's next notice; a `get` fails as a
 * timeout does, never as NOT_FOUND. Against a real nats-server, with a stand-in client served on
 * `mesh.provision.<node>` that the test starts and stops.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus, flush, publish, serve, type Served } from "@mesh/bus";
import { credentialFor, deadline, hasCode, busSuite, startCuttableLink } from "@mesh/bus/testing";
import { ErrorCode, provisionChangedSubject, provisionSubject } from "@mesh/protocol";
import type { ProvisionItem } from "@mesh/sdk/internal";
import { Provisioner, type ProvisionerOptions } from "./provisioner.js";

const NODE = "n1";
const WAIT_MS = 10_000;

describe("the runtime's provisioner when its client is not reachable", () => {
  const fx = busSuite({ module: "x", tearDown: () => stopClient() }, { before, after });
  let client: Served | undefined;
  let value = "Hello";
  const log = recordedLog();

  /** A stand-in provisioner client of NODE, served under `name`, answering every ask by `answer`. */
  const serveClient = async (name: string, answer: () => Promise<unknown>): Promise<Served> => {
    const served = await serve(fx.admin, {
      name,
      version: "0.1.0",
      endpoints: [{ name: "provision", subject: provisionSubject(NODE), handler: answer }],
    });
    await flush(fx.admin);
    return served;
  };
  /** A client the host's old connection stands for: routed to, it never answers. */
  const serveSilentClient = (name: string): Promise<Served> =>
    serveClient(name, () => new Promise<never>(() => undefined));
  const stopClient = async (): Promise<void> => {
    await client?.[Symbol.asyncDispose]();
    client = undefined;
    await flush(fx.admin);
  };
  /** The one stand-in client: one a test left running is stopped first, or both would answer. */
  const startClient = async (): Promise<void> => {
    await stopClient();
    client = await serveClient("provision-stand-in", () => Promise.resolve({ value }));
  };
  const notice = (): void =>
    publish(fx.admin, provisionChangedSubject(NODE), { module: "hello", kind: "config" });
  /** A watch of hello's greeting: what it handed, and a wait for the next. */
  const watchGreeting = async (provisioner: Provisioner) => {
    const handed: ProvisionItem[] = [];
    let wake: (() => void) | undefined;
    const stop = await provisioner.watch("hello", { kind: "config", key: "greeting" }, (item) => {
      handed.push(item);
      wake?.();
    });
    return { handed, stop, next: () => new Promise<void>((resolve) => (wake = resolve)) };
  };

  test("a watch hands nothing while no one answers, and the value once the client is back", async () => {
    await startClient();
    const provisioner = new Provisioner({
      bus: fx.admin,
      node: NODE,
      askTimeoutMs: 2_000,
      log: log.line,
    });
    const watch = await watchGreeting(provisioner);
    try {
      assert.deepEqual(watch.handed, [{ value: "Hello" }]);
      await stopClient();
      notice();
      await log.shows(/could not ask again .*not reachable/);
      assert.deepEqual(watch.handed, [{ value: "Hello" }], "no refusal handed to module code");

      value = "Hi";
      // Asked again until answered (or on the notice): either hands the value once.
      const next = watch.next();
      await startClient();
      notice();
      await deadline(next, WAIT_MS, "the value after the client came back");
      assert.deepEqual(watch.handed, [{ value: "Hello" }, { value: "Hi" }]);
    } finally {
      watch.stop();
      await provisioner.close();
    }
  });

  test("a get while no one answers fails as a timeout, not as NOT_FOUND", async () => {
    await stopClient();
    const provisioner = new Provisioner({ bus: fx.admin, node: NODE, log: () => undefined });
    try {
      await assert.rejects(
        provisioner.get("hello", { kind: "config", key: "greeting" }),
        hasCode(ErrorCode.TIMEOUT, /provisioner client of n1 is not reachable/),
      );
    } finally {
      await provisioner.close();
    }
  });

  test("a get that a client still routed to never answers fails as not reachable, not as the bus's timeout", async () => {
    // A host killed with SIGKILL: until the server has seen its connection close, a request is
    // routed to its subscription and times out instead of finding no responders (CI, loaded).
    await stopClient();
    const silent = await serveSilentClient("provision-silent");
    const provisioner = new Provisioner({
      bus: fx.admin,
      node: NODE,
      askTimeoutMs: 500,
      log: () => undefined,
    });
    try {
      await assert.rejects(
        provisioner.get("hello", { kind: "config", key: "greeting" }),
        hasCode(ErrorCode.TIMEOUT, /provisioner client of n1 is not reachable \(nothing answered/),
      );
    } finally {
      await provisioner.close();
      await silent[Symbol.asyncDispose]();
    }
  });

  /**
   * The runtime's connection through a link the test cuts: only it is away, as a runtime whose
   * host got back from a partition first.
   */
  const cuttableConnection = async () => {
    const link = await startCuttableLink(fx.server.port);
    const runtimeBus = await MeshBus.connect({
      ...credentialFor(fx.server, fx.server.admin, { node: NODE, module: "runtime" }),
      servers: [link.url],
    });
    return {
      bus: runtimeBus,
      /** Cuts the connection and keeps it away; resolves once the client noticed. */
      cut: async (): Promise<void> => {
        const events = runtimeBus.events();
        link.cut();
        for await (const event of events) if (event.type === "disconnected") break;
      },
      /** Lets the client connect again. */
      mend: () => link.mend(),
      async close(): Promise<void> {
        await runtimeBus.close();
        await link.close();
      },
    };
  };

  /**
   * A provisioner on the runtime's cuttable connection watching hello's greeting, once it was
   * handed "Hello" (the client serving it); disposing of it stops the watch and closes both.
   */
  const watchOverCuttable = async (options: Pick<ProvisionerOptions, "askTimeoutMs" | "log">) => {
    const runtime = await cuttableConnection();
    value = "Hello";
    await startClient();
    const provisioner = new Provisioner({ bus: runtime.bus, node: NODE, ...options });
    const watch = await watchGreeting(provisioner);
    const close = async (): Promise<void> => {
      watch.stop();
      await provisioner.close();
      await runtime.close();
    };
    try {
      assert.deepEqual(watch.handed, [{ value: "Hello" }]);
    } catch (error) {
      await close();
      throw error;
    }
    return { ...watch, cut: runtime.cut, mend: runtime.mend, [Symbol.asyncDispose]: close };
  };

  test("a change whose notice was said while the runtime's connection was away reaches the watch when it is back", async () => {
    // The fleet test saw the notice lost so.
    await using watch = await watchOverCuttable({ log: () => undefined });
    await watch.cut();
    value = "Hi";
    notice();
    await flush(fx.admin);
    const next = watch.next();
    watch.mend();
    await deadline(next, WAIT_MS, "the value once the runtime's connection is back");
    assert.deepEqual(watch.handed, [{ value: "Hello" }, { value: "Hi" }]);
  });

  test("an ask made when the connection is back that nothing answers is made again until answered, with no notice", async () => {
    // A 5-minute partition left a node on its old greeting for good: the host, back first,
    // said its notice while the runtime was away, and the runtime's ask when back was routed to
    // the host's old connection, which the server had not yet seen close (no answer, ever).
    await using watch = await watchOverCuttable({ askTimeoutMs: 500, log: log.line });
    await watch.cut();
    await stopClient();
    const silent = await serveSilentClient("provision-old-connection");
    try {
      value = "Hi";
      notice();
      await flush(fx.admin);
      log.clear();
      watch.mend();
      await log.shows(/could not ask again/);
      assert.deepEqual(watch.handed, [{ value: "Hello" }], "nothing handed while unanswered");
    } finally {
      await silent[Symbol.asyncDispose]();
    }
    const next = watch.next();
    await startClient();
    await deadline(next, WAIT_MS, "the value once the client answers, with no notice said");
    assert.deepEqual(watch.handed, [{ value: "Hello" }, { value: "Hi" }]);
  });
});

/** The provisioner's log as it writes it, and a wait for a line that matches. */
function recordedLog() {
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  return {
    /** The provisioner's `log`. */
    line: (line: string): void => {
      lines.push(line);
      for (const check of waiting) check();
    },
    /** Forgets the lines logged so far. */
    clear: (): void => {
      lines.length = 0;
    },
    /** Resolves once a line matches; fails after WAIT_MS, saying what the log showed. */
    shows: (pattern: RegExp): Promise<void> =>
      deadline(
        new Promise<void>((resolve) => {
          const check = () => {
            if (lines.some((l) => pattern.test(l))) {
              waiting.delete(check);
              resolve();
            }
          };
          waiting.add(check);
          check();
        }),
        WAIT_MS,
        `the log to show ${String(pattern)}`,
      ).catch((error: unknown) => {
        throw new Error(
          `${(error as Error).message}; it showed: ${lines.join(" | ") || "nothing"}`,
        );
      }),
  };
}
