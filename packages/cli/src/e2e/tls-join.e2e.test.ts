/**
 * `mesh up --listen ADDR` (issue 13.2): the bus over TLS with a certificate the mesh made for
 * itself. A join token carries the certificate's SHA-256; `mesh join` reads the bus's
 * certificate, holds it to that pin before the token's secret is sent, and joins a second node
 * over TLS; its credential pins the certificate. A token whose pin is another certificate's is
 * refused with TLS_PIN_MISMATCH (and, since nothing was sent, the token still works with the
 * right pin). A token without a pin is refused for a bus beyond loopback (BUS_UNPROTECTED).
 */
import assert from "node:assert/strict";
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MeshBus, readCredential } from "@mesh/bus";
import { certificateFingerprint, makeSelfSigned } from "@mesh/bus/server";
import { freePort } from "@mesh/bus/testing";
import { ErrorCode, pinJoinToken, unpinJoinToken } from "@mesh/protocol";
import { DemoMesh, type UpReport } from "../testing/demo-mesh.js";
import { runMesh } from "../testing/run-mesh.js";

let mesh: DemoMesh | undefined;
let report: UpReport | undefined;
const roots: string[] = [];
const newRoot = async (name: string) => {
  const dir = await mkdtemp(join(tmpdir(), `mesh-tls-${name}-`));
  roots.push(dir);
  return dir;
};

before(async () => {
  const root = await newRoot("up");
  mesh = new DemoMesh({
    root,
    port: await freePort(),
    node: "tls-1",
    demo: false,
    args: ["--listen", "127.0.0.1", "--no-runtime"],
  });
  report = await mesh.up();
});

after(async () => {
  await mesh?.stop();
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function joinToken(): Promise<{ token: string; fingerprint: string }> {
  assert.ok(mesh !== undefined);
  const made = await runMesh(["join-token", "--root", mesh.root, "--json"]);
  assert.equal(made.code, 0, made.stdout + made.stderr);
  return JSON.parse(made.stdout) as { token: string; fingerprint: string };
}

async function joinAs(node: string, token: string, url: string) {
  const root = await newRoot(node);
  const run = await runMesh([
    "join",
    url,
    "--token",
    token,
    "--node",
    node,
    "--root",
    root,
    "--no-run",
    "--json",
  ]);
  return { root, run };
}

describe("mesh up --listen over TLS", () => {
  test("the bus speaks TLS with the mesh's own certificate, and every credential pins it", async () => {
    assert.ok(mesh !== undefined && report !== undefined);
    assert.match(report.bus.url, /^tls:\/\/127\.0\.0\.1:\d+$/);
    const cert = await readFile(join(mesh.root, "tls", "bus-cert.pem"), "utf8");
    const operator = await readCredential(report.credentials.operator);
    assert.equal(operator.fingerprint, certificateFingerprint(cert));
    assert.equal(operator.ca, cert);
  });

  test("a second node joins over TLS with the token's pin; its credential pins the certificate", async () => {
    assert.ok(report !== undefined);
    const { token, fingerprint } = await joinToken();
    assert.equal(unpinJoinToken(token).fingerprint, fingerprint, "the token carries the pin");
    const { root, run } = await joinAs("tls-2", token, report.bus.url);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const credential = await readCredential(join(root, "credentials", "host.json"));
    assert.equal(credential.fingerprint, fingerprint);
    const bus = await MeshBus.connect(credential, { say: () => undefined });
    await bus.close();
  });

  test("a token pinning another certificate is refused with TLS_PIN_MISMATCH before its secret is sent", async () => {
    assert.ok(report !== undefined);
    const { token } = await joinToken();
    const impostor = makeSelfSigned({ commonName: "impostor", hosts: ["127.0.0.1"] });
    const wrong = pinJoinToken(unpinJoinToken(token).token, impostor.fingerprint);
    const refused = await joinAs("tls-3", wrong, report.bus.url);
    assert.equal(refused.run.code, 3, refused.run.stdout + refused.run.stderr);
    assert.match(refused.run.stdout + refused.run.stderr, new RegExp(ErrorCode.TLS_PIN_MISMATCH));
    const right = await joinAs("tls-3", token, report.bus.url);
    assert.equal(right.run.code, 0, "the token was not spent on the refused join");
  });

  test("a token without a pin is refused for a bus beyond loopback with BUS_UNPROTECTED", async () => {
    const { token } = await joinToken();
    const { run } = await joinAs("tls-4", unpinJoinToken(token).token, "nats://10.255.0.1:4222");
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.match(run.stdout + run.stderr, new RegExp(ErrorCode.BUS_UNPROTECTED));
  });
});
