/**
 * Issue 14.6: an unreachable provisioner client (no responders: its host restarting) is not a
 * refusal. A watch hands nothing and asks again on the client's next notice; a `get` fails as a
 * timeout does, never as NOT_FOUND. Against a real nats-server, with a stand-in client served on
 * `mesh.provision.<node>` that the test starts and stops.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus, flush, publish, serve, type Served } from "@mesh/bus";
import { credentialFor, deadline, startTestServer, type TestServer } from "@mesh/bus/testing";
import { ErrorCode, isMeshError, provisionChangedSubject, provisionSubject } from "@mesh/protocol";
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

  const startClient = async (): Promise<void> => {
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
  const stopClient = async (): Promise<void> => {
    await client?.[Symbol.asyncDispose]();
    client = undefined;
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
    );

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
      await startClient();
      const next = new Promise<void>((resolve) => (wake = resolve));
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
      await provisioner.get("hello", { kind: "config", key: "greeting" });
      assert.fail("a get with no client answered");
    } catch (error) {
      assert.ok(isMeshError(error), String(error));
      assert.equal(error.code, ErrorCode.TIMEOUT, error.message);
      assert.match(error.message, /provisioner client of n1 is not reachable/);
    } finally {
      await provisioner.close();
    }
  });
});
