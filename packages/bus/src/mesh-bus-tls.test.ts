import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import { ErrorCode, type Credential } from "@mesh/protocol";
import { KvBucket } from "./kv-bucket.js";
import { MeshBus } from "./mesh-bus.js";
import { credentialFor, deadline, startTestServer, type TestServer } from "./testing/harness.js";
import { hasCode } from "./testing/has-code.js";
import { natsOf } from "./mesh-bus.js";

const run = promisify(execFile);

// A refusal is one TLS handshake away; a retry loop would show as the deadline's TIMEOUT.
const PROMPT_MS = 3_000;

interface Certificate {
  readonly certFile: string;
  readonly keyFile: string;
  readonly pem: string;
  /** SHA-256, as `AA:BB:…`, the form a credential pins. */
  readonly fingerprint: string;
}

/**
 * A self-signed certificate as docs/nats.md §4 makes it: the SAN names localhost too, because
 * the client verifies a connection to an IP address against "localhost".
 */
async function selfSigned(dir: string, name: string): Promise<Certificate> {
  const certFile = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  // openssl: Node can check certificates but cannot make them.
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-days",
    "2",
    "-subj",
    "/CN=nats-node1",
    "-addext",
    "subjectAltName=IP:127.0.0.1,DNS:localhost",
  ]);
  const pem = await readFile(certFile, "utf8");
  return { certFile, keyFile, pem, fingerprint: new X509Certificate(pem).fingerprint256 };
}

let dir = "";
let genuine: Certificate;
let impostor: Certificate;
let server: TestServer;
let impostorServer: TestServer;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-tls-"));
  // Same subject and names, another key: only the fingerprint tells them apart.
  genuine = await selfSigned(dir, "genuine");
  impostor = await selfSigned(dir, "impostor");
  server = await startTestServer({
    tls: { certFile: genuine.certFile, keyFile: genuine.keyFile },
  });
  impostorServer = await startTestServer({
    tls: { certFile: impostor.certFile, keyFile: impostor.keyFile },
  });
});

after(async () => {
  await server?.stop();
  await impostorServer?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The admin's credential for `target`, pinned to `pin` and trusting `ca`. */
function pinned(target: TestServer, pin: string, ca: string): Credential {
  return {
    ...credentialFor(target, target.admin, { node: "n0", module: "controller" }),
    fingerprint: pin,
    ca,
  };
}

describe("MeshBus.connect with a pinned certificate", () => {
  it("connects to the server whose certificate is pinned, and reads a bucket", async () => {
    const bus = await deadline(
      MeshBus.connect(pinned(server, genuine.fingerprint, genuine.pem)),
      PROMPT_MS,
      "the connection",
    );
    try {
      await natsOf(bus).kvm.create("tls_check");
      const bucket = await KvBucket.openWith(bus, "tls_check", z.object({ n: z.number() }));
      assert.equal(await bucket.get("missing"), undefined);
      await bucket.put("present", { n: 1 });
      assert.deepEqual((await bucket.get("present"))?.value, { n: 1 });
    } finally {
      await bus.close();
    }
  });

  // A pin that is not the server's certificate, and a server that is not the pinned one: each
  // refused at once, also by a connect that would wait for the bus to come up.
  const refusals: ReadonlyArray<{
    readonly name: string;
    readonly to: () => TestServer;
    readonly pin: () => string;
  }> = [
    {
      name: "a pin that does not match",
      to: () => server,
      pin: () => impostor.fingerprint,
    },
    {
      name: "an impostor with the same name and another key",
      to: () => impostorServer,
      pin: () => genuine.fingerprint,
    },
  ];
  for (const r of refusals) {
    for (const waitForBus of [false, true]) {
      const waiting = waitForBus ? ", also when waiting for the bus" : "";
      it(`refuses ${r.name} with TLS_PIN_MISMATCH, promptly${waiting}`, async () => {
        const connecting = MeshBus.connect(
          pinned(r.to(), r.pin(), genuine.pem),
          waitForBus ? { waitForBus: true } : {},
        );
        await assert.rejects(
          deadline(connecting, PROMPT_MS, "the refusal"),
          hasCode(ErrorCode.TLS_PIN_MISMATCH),
        );
      });
    }
  }
});
