import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { rootPaths } from "../mesh-root.js";
import { busShape, clusterSize } from "./bus-shape.js";
import { checkForeignUrls } from "./foreign-bus.js";
import { parseListen, planListen } from "./bus-listen.js";

const paths = rootPaths("/tmp/mesh-shape-test");
const login = { user: "mesh", password: "pw" };

describe("busShape", () => {
  it("keeps a cluster's ports from the root's last run", async () => {
    const previous = {
      port: 4222,
      cluster: { ports: [4222, 5000, 5001], routePorts: [6000, 6001, 6002] },
    };
    assert.deepEqual(await busShape({ paths, port: 4222, previous }), {
      kind: "cluster",
      ports: [4222, 5000, 5001],
      routePorts: [6000, 6001, 6002],
    });
  });

  it("picks distinct ports for a new cluster, the first the one asked for", async () => {
    const shape = await busShape({ paths, port: 4222, cluster: 3 });
    assert.equal(shape.kind, "cluster");
    if (shape.kind !== "cluster") return;
    assert.equal(shape.ports[0], 4222);
    assert.equal(new Set([...shape.ports, ...shape.routePorts]).size, 6);
  });

  it("gives servers on addresses of their own the same ports, 6222 for routes", async () => {
    assert.deepEqual(await busShape({ paths, port: 4222, cluster: 3, hosts: 3 }), {
      kind: "cluster",
      ports: [4222, 4222, 4222],
      routePorts: [6222, 6222, 6222],
    });
  });

  it("refuses as many addresses as there are not servers (USAGE)", async () => {
    await assert.rejects(
      busShape({ paths, port: 4222, cluster: 3, hosts: 2 }),
      (error) => isMeshError(error, ErrorCode.USAGE) && /one for each server/.test(error.message),
    );
  });

  it("refuses another shape on a root that ran one (BUS_SHAPE_CHANGED)", async () => {
    await assert.rejects(
      busShape({ paths, port: 4222, cluster: 3, previous: { port: 4222 } }),
      (error) =>
        isMeshError(error, ErrorCode.BUS_SHAPE_CHANGED) && /without --cluster/.test(error.message),
    );
  });
});

describe("planListen with one address per server", () => {
  it("keeps every address, one port for all, and makes a certificate that names each", async () => {
    const root = await mkdtemp(join(tmpdir(), "mesh-listen-"));
    try {
      const plan = await planListen({
        paths: rootPaths(root),
        listen: "10.77.1.11,10.77.1.12:4222,10.77.1.13",
      });
      assert.deepEqual(plan?.state.hosts, ["10.77.1.11", "10.77.1.12", "10.77.1.13"]);
      assert.equal(plan?.port, 4222);
      const cert = new X509Certificate(plan?.tls?.ca ?? "");
      for (const host of ["10.77.1.11", "10.77.1.12", "10.77.1.13"]) {
        assert.ok(cert.checkIP(host) !== undefined, `the certificate names ${host}`);
      }
      await assert.rejects(
        planListen({ paths: rootPaths(root), listen: "10.77.1.11:4222,10.77.1.12:4333" }),
        (error) => isMeshError(error, ErrorCode.USAGE) && /give the port once/.test(error.message),
      );
      await assert.rejects(
        planListen({ paths: rootPaths(root), listen: "10.77.1.11,10.77.1.11" }),
        (error) => isMeshError(error, ErrorCode.USAGE) && /twice/.test(error.message),
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("clusterSize", () => {
  it("takes 3 to 7 and refuses fewer with USAGE", () => {
    assert.equal(clusterSize("3"), 3);
    for (const bad of ["2", "1", "8", "three"]) {
      assert.throws(
        () => clusterSize(bad),
        (error) => isMeshError(error, ErrorCode.USAGE),
        bad,
      );
    }
  });
});

describe("checkForeignUrls", () => {
  it("takes loopback in the clear, tls:// anywhere, and a pinned login anywhere", () => {
    assert.deepEqual(checkForeignUrls("nats://127.0.0.1:4222, localhost:4223", login, false), [
      "nats://127.0.0.1:4222",
      "localhost:4223",
    ]);
    assert.deepEqual(checkForeignUrls("tls://10.0.0.5:4222", login, false), [
      "tls://10.0.0.5:4222",
    ]);
    const pinned = { ...login, fingerprint: "AA:".repeat(31) + "AA", ca: "PEM" };
    assert.deepEqual(checkForeignUrls("nats://10.0.0.5:4222", pinned, false), [
      "nats://10.0.0.5:4222",
    ]);
  });

  it("refuses a plain url beyond loopback unless insecure (BUS_UNPROTECTED), and a url that is none", () => {
    assert.throws(
      () => checkForeignUrls("nats://127.0.0.1:4222,nats://10.0.0.5:4222", login, false),
      (error) => isMeshError(error, ErrorCode.BUS_UNPROTECTED) && /10\.0\.0\.5/.test(error.message),
    );
    assert.deepEqual(checkForeignUrls("nats://10.0.0.5:4222", login, true), [
      "nats://10.0.0.5:4222",
    ]);
    assert.throws(
      () => checkForeignUrls("http://x:1", login, false),
      (error) => isMeshError(error, ErrorCode.USAGE),
    );
  });
});

describe("parseListen", () => {
  it("takes host, host:port and [v6]:port, and refuses every-address and nonsense with USAGE", () => {
    assert.deepEqual(parseListen("10.0.0.5"), { host: "10.0.0.5" });
    assert.deepEqual(parseListen("10.0.0.5:4333"), { host: "10.0.0.5", port: 4333 });
    assert.deepEqual(parseListen("[fd00::5]:4333"), { host: "fd00::5", port: 4333 });
    assert.deepEqual(parseListen("mesh.example"), { host: "mesh.example" });
    for (const bad of ["0.0.0.0", "[::]:4222", "10.0.0.5:99999", "a b", ""]) {
      assert.throws(
        () => parseListen(bad),
        (error) => isMeshError(error, ErrorCode.USAGE),
        bad,
      );
    }
  });
});
