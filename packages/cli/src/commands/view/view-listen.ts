/**
 * What `mesh view --listen ADDR` needs beyond a loopback view (decisions 0170, 0171): the mesh's
 * certificate for HTTPS, the view's login key (kept in the root, so `mesh view-token` signs links
 * the running view accepts), and the credentials its sessions act with, which the controller
 * issues — `view` with the operator's grant, `view-read` with reads only.
 */
import { randomBytes, X509Certificate } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { MeshBus, generateNodeKeys, unseal } from "@mesh/bus";
import { makeSelfSigned } from "@mesh/bus/server";
import { askViewCredential } from "@mesh/controller";
import {
  Credential,
  ErrorCode,
  MeshError,
  ViewPrincipal,
  isMeshError,
  viewSealContext,
} from "@mesh/protocol";
import { LOGIN_KEY_BYTES, type Access } from "@mesh/view";
import type { RootPaths } from "../../mesh-root.js";

/** How long the controller has to issue a credential (a users-list bus reloads first). */
const ISSUE_TIMEOUT_MS = 30_000;

/** The view's folder in the root: its login key and where it listens. */
export const viewDir = (paths: RootPaths): string => join(paths.root, "view");
const loginKeyFile = (paths: RootPaths): string => join(viewDir(paths), "login-key");
export const listeningFile = (paths: RootPaths): string => join(viewDir(paths), "listening.json");

const covers = (certPem: string, host: string): boolean => {
  const cert = new X509Certificate(certPem);
  return isIP(host) === 0 ? cert.checkHost(host) !== undefined : cert.checkIP(host) !== undefined;
};

/**
 * The mesh's certificate (`mesh up --listen`'s, in `<root>/tls/`) when it names `host`; else one
 * made for the view the same way, kept beside it and reused while it names `host`.
 */
export async function viewCertificate(
  paths: RootPaths,
  host: string,
): Promise<{ cert: string; key: string; made: boolean }> {
  const dir = join(paths.root, "tls");
  for (const name of ["bus", "view"]) {
    const cert = await readFile(join(dir, `${name}-cert.pem`), "utf8").catch(() => undefined);
    const key = await readFile(join(dir, `${name}-key.pem`), "utf8").catch(() => undefined);
    if (cert !== undefined && key !== undefined && covers(cert, host)) {
      return { cert, key, made: false };
    }
  }
  const made = makeSelfSigned({
    commonName: `mesh view ${host}`,
    hosts: [...new Set([host, "127.0.0.1", "localhost"])],
  });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, "view-key.pem"), made.keyPem, { mode: 0o600 });
  await writeFile(join(dir, "view-cert.pem"), made.certPem, { mode: 0o644 });
  return { cert: made.certPem, key: made.keyPem, made: true };
}

/** The view's login key: made once (0600), read by `mesh view` and `mesh view-token`. */
export async function loginKey(paths: RootPaths, create: boolean): Promise<Buffer> {
  const file = loginKeyFile(paths);
  const kept = await readFile(file).catch(() => undefined);
  if (kept !== undefined && kept.length >= LOGIN_KEY_BYTES) return kept;
  if (!create) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no view login key at ${file}: start \`mesh view --listen ADDR\` with this root first`,
      { path: file },
    );
  }
  await mkdir(viewDir(paths), { recursive: true, mode: 0o700 });
  const key = randomBytes(LOGIN_KEY_BYTES);
  await writeFile(file, key, { mode: 0o600 });
  return key;
}

/**
 * Connects as the view's principal of `access`, its credential asked of the controller with the
 * operator's bus and opened with a key made for the ask.
 */
export async function connectAsView(
  operator: MeshBus,
  access: Access,
  signal: AbortSignal,
): Promise<MeshBus> {
  const keys = generateNodeKeys();
  const answer = await askViewCredential(
    operator,
    { access, publicKey: keys.publicKey },
    { timeoutMs: ISSUE_TIMEOUT_MS, signal },
  ).catch((error: unknown) => {
    if (!isMeshError(error, ErrorCode.TIMEOUT) && !isMeshError(error, ErrorCode.NOT_FOUND))
      throw error;
    throw new MeshError(
      error.code,
      `the controller did not issue the view's ${access} credential (${error.message}); mesh view --listen needs the mesh running (\`mesh up\`, then \`mesh status\`)`,
      { cause: error },
    );
  });
  const principal = ViewPrincipal[access];
  const credential = Credential.parse(
    JSON.parse(unseal(keys.privateKey, answer.sealed, viewSealContext(principal)).toString()),
  );
  return MeshBus.connect(credential, { signal, waitForBus: true });
}
