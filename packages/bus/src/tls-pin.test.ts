/**
 * The bus over TLS with a certificate the mesh makes itself (server/self-signed.ts), and a pin
 * that is held before anything is trusted (tls-pin.ts): against real nats-servers, a single one
 * and a three-server cluster whose routes verify each other with the same certificate.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { MeshBus } from "./mesh-bus.js";
import { certificateFingerprint, keyMatches, makeSelfSigned } from "./server/self-signed.js";
import { fetchPinnedCertificate } from "./tls-pin.js";
import { layoutReplicas, startTestCluster } from "./testing/cluster.js";
import { deadline, startTestServer, type TestServer } from "./testing/harness.js";
import { waitFor } from "./testing/wait-for.js";

const made = makeSelfSigned({ commonName: "mesh-test", hosts: ["127.0.0.1", "localhost", "::1"] });
const other = makeSelfSigned({ commonName: "mesh-test", hosts: ["127.0.0.1", "localhost"] });
let dir = "";
let tlsServer: TestServer;
let plainServer: TestServer;
const tls = () => ({
  certFile: join(dir, "cert.pem"),
  keyFile: join(dir, "key.pem"),
  caFile: join(dir, "cert.pem"),
});

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-tls-"));
  await writeFile(join(dir, "cert.pem"), made.certPem, { mode: 0o600 });
  await writeFile(join(dir, "key.pem"), made.keyPem, { mode: 0o600 });
  tlsServer = await startTestServer({ tls: tls() });
  plainServer = await startTestServer();
});

after(async () => {
  await tlsServer?.stop();
  await plainServer?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("makeSelfSigned", () => {
  it("makes a certificate Node reads: its names, its key, signed by itself, fingerprint as pinned", () => {
    const cert = new X509Certificate(made.certPem);
    assert.equal(cert.subject, "CN=mesh-test");
    assert.match(cert.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
    assert.match(cert.subjectAltName ?? "", /DNS:localhost/);
    assert.match(cert.subjectAltName ?? "", /IP Address:0:0:0:0:0:0:0:1/);
    assert.ok(cert.verify(cert.publicKey), "signed by its own key");
    assert.ok(keyMatches(made.certPem, made.keyPem));
    assert.ok(!keyMatches(made.certPem, other.keyPem));
    assert.equal(certificateFingerprint(made.certPem), made.fingerprint);
    assert.match(made.fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });
});

describe("fetchPinnedCertificate", () => {
  it("gives the certificate of the pin, and a connection pinned with it is taken", async () => {
    const ca = await fetchPinnedCertificate(tlsServer.url, made.fingerprint);
    assert.equal(certificateFingerprint(ca), made.fingerprint);
    const bus = await MeshBus.connect(
      {
        servers: [tlsServer.url],
        ...tlsServer.admin,
        node: "n1",
        module: "t",
        fingerprint: made.fingerprint,
        ca,
      },
      { say: () => undefined },
    );
    await bus.close();
  });

  it("refuses another certificate than the pinned one with TLS_PIN_MISMATCH", async () => {
    await assert.rejects(
      fetchPinnedCertificate(tlsServer.url, other.fingerprint),
      (error) =>
        isMeshError(error, ErrorCode.TLS_PIN_MISMATCH) && error.message.includes(made.fingerprint),
    );
  });

  it("refuses a bus that does not speak TLS with TLS_PIN_MISMATCH", async () => {
    await assert.rejects(fetchPinnedCertificate(plainServer.url, made.fingerprint), (error) =>
      isMeshError(error, ErrorCode.TLS_PIN_MISMATCH),
    );
  });

  it("a peer that never answers: CONNECT_FAILED at its deadline, or at once on a stop, its socket closed either way", async () => {
    const held: Socket[] = [];
    const closed: Promise<void>[] = [];
    const silent = createServer((socket) => {
      held.push(socket);
      closed.push(new Promise((resolve) => socket.once("close", () => resolve())));
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = `nats://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const started = Date.now();
      await assert.rejects(
        fetchPinnedCertificate(url, made.fingerprint, { timeoutMs: 300 }),
        (error) =>
          isMeshError(error, ErrorCode.CONNECT_FAILED) &&
          /no answer within 300 ms/.test(error.message),
      );
      assert.ok(Date.now() - started >= 250, `gave up after ${Date.now() - started} ms`);
      const stop = new AbortController();
      const stopped = fetchPinnedCertificate(url, made.fingerprint, {
        timeoutMs: 600_000,
        signal: stop.signal,
      });
      await waitFor(() => held.length >= 2, { what: "the second connection accepted" });
      stop.abort();
      await assert.rejects(
        stopped,
        (error) => isMeshError(error, ErrorCode.CONNECT_FAILED) && /aborted/.test(error.message),
      );
      // The server side hears each connection close: nothing is left open by the deadline or the stop.
      await deadline(Promise.all(closed), 10_000, "every connection closed");
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("a cluster over TLS", () => {
  it("forms with routes verified by the self-made certificate and takes 3 replicas", async () => {
    await using cluster = await startTestCluster({ tls: tls() });
    const credential = {
      ...cluster.credential(cluster.admin, { node: "n1", module: "t" }),
      fingerprint: made.fingerprint,
      ca: made.certPem,
    };
    assert.equal(await layoutReplicas(credential), 3);
  });
});
