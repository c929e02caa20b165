/**
 * Issue 14.6: an unreachable provisioner client (no responders: its host restarting) is not a
 * refusal. A watch hands nothing and asks again on the client's next notice; a `get` fails as a
 * timeout does, never as NOT_FOUND. Against a real nats-server, with a stand-in client served on
 * `mesh.provision.<node>` that the test starts and stops.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus, flush, publish, serve, type Served } from "@mesh/bus";
import {
  credentialFor,
  deadline,
  hasCode,
  startCuttableLink,
  startTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import { ErrorCode, provisionChangedSubject, provisionSubject } from "@mesh/protocol";
import type { ProvisionItem } from "@mesh/sdk/internal";
import { Provisioner } from "./provisioner.js";

const NODE = "n1";
const WAIT_MS = 10_000;

describe("the runtime's provisioner when its client is not reachable", () => {
  let server: TestServer;
  let bus: MeshBus;
  let client: Served | undefined;
  let value = "Hello";
  const logs: string[] = [];
  const logged = new Set<() => void>();

  const stopClient = async (): Promise<void> => {
    await client?.[Symbol.asyncDispose]();
    client = undefined;
    await flush(bus);
  };
  /** The one stand-in client: one a test left running is stopped first, or both would answer. */
  const startClient = async (): Promise<void> => {
    await stopClient();
    client = await serve(bus, {
      name: "provision-stand-in",
      version: "0.1.0",
      endpoints: [
        {
          name: "provision",
          subject: provisionSubject(NODE),
          handler: () => Promise.resolve({ value }),
        },
      ],
    });
    await flush(bus);
  };
  const notice = (): void =>
    publish(bus, provisionChangedSubject(NODE), { module: "hello", kind: "config" });
  const logShows = (pattern: RegExp): Promise<void> =>
    deadline(
      new Promise<void>((resolve) => {
        const check = () => {
          if (logs.some((l) => pattern.test(l))) {
            logged.delete(check);
            resolve();
          }
        };
        logged.add(check);
        check();
      }),
      WAIT_MS,
      `the log to show ${String(pattern)}`,
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; it showed: ${logs.join(" | ") || "nothing"}`);
    });

  before(async () => {
    server = await startTestServer();
    bus = await MeshBus.connect(credentialFor(server, server.admin, { node: NODE, module: "x" }));
  });
  after(async () => {
    await stopClient();
    await bus?.close();
    await server?.stop();
  });

  test("a watch hands nothing while no one answers, and the value once the client is back", async () => {
    await startClient();
    const provisioner = new Provisioner({
      bus,
      node: NODE,
      askTimeoutMs: 2_000,
      log: (line) => {
        logs.push(line);
        for (const check of logged) check();
      },
    });
    const handed: ProvisionItem[] = [];
    let wake: (() => void) | undefined;
    const deliver = (item: ProvisionItem): void => {
      handed.push(item);
      wake?.();
    };
    const stop = await provisioner.watch("hello", { kind: "config", key: "greeting" }, deliver);
    try {
      assert.deepEqual(handed, [{ value: "Hello" }]);
      await stopClient();
      notice();
      await logShows(/could not ask again .*not reachable/);
      assert.deepEqual(handed, [{ value: "Hello" }], "no refusal handed to module code");

      value = "Hi";
      // Asked again until answered (or on the notice): either hands the value once.
      const next = new Promise<void>((resolve) => (wake = resolve));
      await startClient();
      notice();
      await deadline(next, WAIT_MS, "the value after the client came back");
      assert.deepEqual(handed, [{ value: "Hello" }, { value: "Hi" }]);
    } finally {
      stop();
      await provisioner.close();
    }
  });

  test("a get while no one answers fails as a timeout, not as NOT_FOUND", async () => {
    await stopClient();
    const provisioner = new Provisioner({ bus, node: NODE, log: () => undefined });
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
    const silent = await serve(bus, {
      name: "provision-silent",
      version: "0.1.0",
      endpoints: [
        {
          name: "provision",
          subject: provisionSubject(NODE),
          handler: () => new Promise<never>(() => undefined),
        },
      ],
    });
    await flush(bus);
    const provisioner = new Provisioner({
      bus,
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
    const link = await startCuttableLink(server.port);
    const runtimeBus = await MeshBus.connect({
      ...credentialFor(server, server.admin, { node: NODE, module: "runtime" }),
      servers: [link.url],
    });
    return {
      bus: runtimeBus,
      /** Cuts the connection and keeps it away; resolves once the client noticed. */
      async cut(): Promise<void> {
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

  test("a change whose notice was said while the runtime's connection was away reaches the watch when it is back", async () => {
    // The fleet test saw the notice lost so.
    const runtime = await cuttableConnection();
    value = "Hello";
    await startClient();
    const provisioner = new Provisioner({ bus: runtime.bus, node: NODE, log: () => undefined });
    const watch = await watchGreeting(provisioner);
    try {
      assert.deepEqual(watch.handed, [{ value: "Hello" }]);
      await runtime.cut();
      value = "Hi";
      notice();
      await flush(bus);
      const next = watch.next();
      runtime.mend();
      await deadline(next, WAIT_MS, "the value once the runtime's connection is back");
      assert.deepEqual(watch.handed, [{ value: "Hello" }, { value: "Hi" }]);
    } finally {
      watch.stop();
      await provisioner.close();
      await runtime.close();
    }
  });

  test("an ask made when the connection is back that nothing answers is made again until answered, with no notice", async () => {
    // A 5-minute partition left a node on its old greeting for good: the host, back first,
    // said its notice while the runtime was away, and the runtime's ask when back was routed to
    // the host's old connection, which the server had not yet seen close (no answer, ever).
    const runtime = await cuttableConnection();
    value = "Hello";
    await startClient();
    const provisioner = new Provisioner({
      bus: runtime.bus,
      node: NODE,
      askTimeoutMs: 500,
      log: (line) => {
        logs.push(line);
        for (const check of logged) check();
      },
    });
    const watch = await watchGreeting(provisioner);
    let silent: Served | undefined;
    try {
      assert.deepEqual(watch.handed, [{ value: "Hello" }]);
      await runtime.cut();
      await stopClient();
      silent = await serve(bus, {
        name: "provision-old-connection",
        version: "0.1.0",
        endpoints: [
          {
            name: "provision",
            subject: provisionSubject(NODE),
            handler: () => new Promise<never>(() => undefined),
          },
        ],
      });
      value = "Hi";
      notice();
      await flush(bus);
      logs.length = 0;
      runtime.mend();
      await logShows(/could not ask again/);
      assert.deepEqual(watch.handed, [{ value: "Hello" }], "nothing handed while unanswered");
      const next = watch.next();
      await silent[Symbol.asyncDispose]();
      silent = undefined;
      await startClient();
      await deadline(next, WAIT_MS, "the value once the client answers, with no notice said");
      assert.deepEqual(watch.handed, [{ value: "Hello" }, { value: "Hi" }]);
    } finally {
      watch.stop();
      await silent?.[Symbol.asyncDispose]();
      await provisioner.close();
      await runtime.close();
    }
  });
});
