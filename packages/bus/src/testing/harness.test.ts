import assert from "node:assert/strict";
import { access } from "node:fs/promises";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { ErrorCode, inboxPrefix, isMeshError } from "@mesh/protocol";
import {
  PROMPT_MS,
  deadline,
  freePort,
  startTestServer,
  type TestServer,
  type TestUser,
} from "./harness.js";
import { connectAs } from "../server/test-servers.js";
import { kvBucketSubjects, moduleGrant } from "./grants.js";

/**
 * Read and write one bucket, and receive on the user's own inbox; these tests open buckets as the
 * stock client does, without direct gets.
 */
const ownBucket = (node: string, module: string, bucket: string) =>
  moduleGrant(node, module, kvBucketSubjects(bucket, { plainGet: true }));

const alpha: TestUser = {
  user: "n1-alpha",
  password: "alpha-pw",
  permissions: ownBucket("n1", "alpha", "alpha_data"),
};
const beta: TestUser = {
  user: "n1-beta",
  password: "beta-pw",
  permissions: ownBucket("n1", "beta", "beta_data"),
};
// Quoting end to end: `$`, `"` and `\` in a name, `$` in the password.
const odd: TestUser = {
  user: 'odd$user"\\name',
  password: "pa$$word",
  permissions: { publish: {}, subscribe: { allow: ["_INBOX.n1.odd.>"] } },
};

describe("startTestServer", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ users: [alpha, beta, odd] });
  });
  after(() => server.stop());

  it("gives an admin that may do everything", async () => {
    const nc = await connectAs(server, server.admin);
    try {
      await new Kvm(nc).create("alpha_data");
      await new Kvm(nc).create("beta_data");
      const kv = await new Kvm(nc).open("beta_data");
      await kv.put("secret", "beta's");
    } finally {
      await nc.close();
    }
  });

  it("lets a user in whose password hash bcryptjs made ($2b$), with $ and quotes in its name", async () => {
    await (await connectAs(server, odd, { inboxPrefix: "_INBOX.n1.odd" })).close();
    await assert.rejects(
      connectAs(server, { user: odd.user, password: "wrong" }),
      (error: Error) => error.name === "AuthorizationError",
    );
  });

  it("denies every publish to a user allowed to publish nothing (no empty allow list)", async () => {
    const nc = await connectAs(server, odd, { inboxPrefix: "_INBOX.n1.odd" });
    try {
      await assert.rejects(
        deadline(nc.request("anything.at.all", "x"), PROMPT_MS, "the publish being refused"),
        /Permissions Violation for Publish to "anything\.at\.all"/,
      );
    } finally {
      await nc.close();
    }
  });

  describe("a user granted its own inbox and one bucket", () => {
    let nc: NatsConnection;
    before(async () => {
      nc = await connectAs(server, alpha, { inboxPrefix: inboxPrefix("n1", "alpha") });
    });
    after(() => nc.close());

    it("reads and writes its own bucket", async () => {
      const kv = await new Kvm(nc).open("alpha_data");
      await kv.put("counter", "1");
      assert.equal((await kv.get("counter"))?.string(), "1");
    });

    it("cannot subscribe to another user's inbox, and is told promptly", async () => {
      const sub = nc.subscribe(`${inboxPrefix("n1", "beta")}.>`);
      const drained = (async () => {
        for await (const _ of sub) {
          // Nothing may arrive.
        }
      })();
      await assert.rejects(
        deadline(drained, PROMPT_MS, "the subscription being refused"),
        (error: Error) => {
          assert.equal(error.name, "PermissionViolationError");
          assert.match(error.message, /Subscription to "_INBOX\.n1\.beta\.>"/);
          return true;
        },
      );
      assert.equal(nc.isClosed(), false);
    });

    it("cannot read a bucket it was not granted, and is told promptly", async () => {
      const kv = await new Kvm(nc).open("beta_data");
      await assert.rejects(
        deadline(kv.get("secret"), PROMPT_MS, "the get being refused"),
        (error: Error) => {
          assert.match(
            error.message,
            /Permissions Violation for Publish to "\$JS\.API\.STREAM\.MSG\.GET\.KV_beta_data"/,
          );
          return true;
        },
      );
      const direct = await new Kvm(nc).open("beta_data", { allow_direct: true });
      await assert.rejects(
        deadline(direct.get("secret"), PROMPT_MS, "the direct get being refused"),
        /Permissions Violation/,
      );
    });

    it("cannot write a bucket it was not granted, and is told promptly", async () => {
      const kv = await new Kvm(nc).open("beta_data");
      await assert.rejects(
        deadline(kv.put("secret", "mine"), PROMPT_MS, "the put being refused"),
        (error: Error) => {
          assert.match(
            error.message,
            /Permissions Violation for Publish to "\$KV\.beta_data\.secret"/,
          );
          return true;
        },
      );
    });

    it("cannot watch a bucket it was not granted, and is told promptly", async () => {
      const kv = await new Kvm(nc).open("beta_data");
      await assert.rejects(
        deadline(kv.watch(), PROMPT_MS, "the watch being refused"),
        /Permissions Violation/,
      );
    });

    it("cannot create a bucket", async () => {
      await assert.rejects(
        deadline(new Kvm(nc).create("alpha_new"), PROMPT_MS, "the create being refused"),
        /Permissions Violation/,
      );
    });

    it("keeps its connection through all of that", async () => {
      await nc.flush();
      assert.equal(nc.isClosed(), false);
    });
  });

  it("setUsers keeps the admin and applies the given users", async () => {
    await server.setUsers([alpha]);
    await (await connectAs(server, server.admin)).close();
    await (await connectAs(server, alpha)).close();
    await assert.rejects(
      connectAs(server, beta),
      (error: Error) => error.name === "AuthorizationError",
    );
  });
});

describe("TestServer.stop", () => {
  it("kills the server by pid and removes its folder; twice is harmless", async () => {
    const server = await startTestServer();
    const { pid, dir } = server;
    process.kill(pid, 0);
    await server.stop();
    assert.throws(
      () => process.kill(pid, 0),
      (error: NodeJS.ErrnoException) => error.code === "ESRCH",
    );
    await assert.rejects(access(dir), (error: NodeJS.ErrnoException) => error.code === "ENOENT");
    await server.stop();
    await server[Symbol.asyncDispose]();
  });
});

describe("freePort", () => {
  it("gives a port that can be listened on", async () => {
    const port = await freePort();
    const listener = createServer();
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen({ host: "127.0.0.1", port }, resolve);
    });
    await new Promise((resolve) => listener.close(resolve));
  });

  it("refuses when already aborted", async () => {
    await assert.rejects(freePort({ signal: AbortSignal.abort() }), (error: unknown) =>
      isMeshError(error, ErrorCode.ABORTED),
    );
  });
});
