/**
 * A process's own config and secrets: a watch of its config through a link the test cuts (as a
 * process of a node behind a partition), against a real server with a stand-in host; and
 * secretPath, a declared secret's file from the environment the host gives a process.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MeshBus, flush, publish, serve, type Served } from "@mesh/bus";
import {
  credentialFor,
  deadline,
  startCuttableLink,
  startTestServer,
  type TestServer,
} from "@mesh/bus/testing";
import { isMeshError, provisionModuleChangedSubject, provisionModuleSubject } from "@mesh/protocol";
import { processConfigSource, secretPath } from "./process-config.js";
import type { ProvisionItem } from "./worker-protocol.js";

const WHO = { node: "n1", module: "notes" };

describe("a process's config watch across a cut link", () => {
  let server: TestServer;
  let host: MeshBus;
  let value = "Hello";
  before(async () => {
    server = await startTestServer();
    host = await MeshBus.connect(credentialFor(server, server.admin, { ...WHO, module: "host" }));
  });
  after(async () => {
    await host?.close();
    await server?.stop();
  });

  /** The host's provision endpoint for the module: answering, or never (its old connection). */
  const hostAnswering = async (answers: boolean): Promise<Served> => {
    const served = await serve(host, {
      name: answers ? "provision-stand-in" : "provision-old-connection",
      version: "0.1.0",
      endpoints: [
        {
          name: "provision",
          subject: provisionModuleSubject(WHO.node, WHO.module),
          handler: () =>
            answers ? Promise.resolve({ value }) : new Promise<never>(() => undefined),
        },
      ],
    });
    await flush(host);
    return served;
  };

  test("a change said while its connection was away reaches it when back, though its ask then goes unanswered at first", async () => {
    // A 5-minute partition: the host, back first, said its notice while the process was away,
    // and the process's ask when back was routed to the host's old connection (decision 0182).
    const link = await startCuttableLink(server.port);
    const bus = await MeshBus.connect({
      ...credentialFor(server, server.admin, WHO),
      servers: [link.url],
    });
    const stopping = new AbortController();
    let answering: Served | undefined = await hostAnswering(true);
    let silent: Served | undefined;
    const seen: ProvisionItem[] = [];
    let wake: (() => void) | undefined;
    const watching = (async () => {
      const source = processConfigSource(bus, { ...WHO, stopping: stopping.signal });
      for await (const item of source.watch("greeting")) {
        seen.push(item);
        wake?.();
      }
    })();
    const next = () => new Promise<void>((resolve) => (wake = resolve));
    try {
      let first = next();
      await deadline(first, 10_000, "the first value");
      assert.deepEqual(seen, [{ value: "Hello" }]);
      const events = bus.events();
      link.cut();
      for await (const event of events) if (event.type === "disconnected") break;
      await answering[Symbol.asyncDispose]();
      answering = undefined;
      silent = await hostAnswering(false);
      value = "Hi";
      publish(host, provisionModuleChangedSubject(WHO.node, WHO.module), {
        module: WHO.module,
        kind: "config",
        key: "greeting",
      });
      await flush(host);
      const back = bus.events();
      link.mend();
      for await (const event of back) if (event.type === "reconnected") break;
      first = next();
      await silent[Symbol.asyncDispose]();
      silent = undefined;
      answering = await hostAnswering(true);
      await deadline(first, 10_000, "the value once the host answers, with no notice said");
      assert.deepEqual(seen, [{ value: "Hello" }, { value: "Hi" }]);
    } finally {
      stopping.abort();
      await watching.catch(() => undefined);
      await answering?.[Symbol.asyncDispose]();
      await silent?.[Symbol.asyncDispose]();
      await bus.close();
      await link.close();
    }
  });
});

describe("secretPath", () => {
  const env = {
    MESH_SECRETS_DIR: "/var/lib/mesh/secrets/notes",
    MESH_SECRET_FILES: JSON.stringify({
      "api-token": "/var/lib/mesh/secrets/notes/api-token",
      broker: "/etc/notes/broker.json",
    }),
  };

  test("names the file the host wrote for a declared secret", () => {
    assert.equal(secretPath("api-token", env), "/var/lib/mesh/secrets/notes/api-token");
    assert.equal(secretPath("broker", env), "/etc/notes/broker.json");
  });

  test("an undeclared secret is NOT_FOUND, naming the declared ones", () => {
    assert.throws(
      () => secretPath("password", env),
      (e: unknown) =>
        isMeshError(e) && e.code === "NOT_FOUND" && /declares api-token, broker/.test(e.message),
    );
  });

  test("outside a mesh host it says so", () => {
    assert.throws(
      () => secretPath("api-token", {}),
      (e: unknown) => isMeshError(e) && /MESH_SECRET_FILES is not set/.test(e.message),
    );
  });
});
