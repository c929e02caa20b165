/**
 * A bus the mesh does not run (`mesh up --bus URLS --bus-credential FILE`): the login its
 * operator gave (a JSON file, 0600, with `user` and `password`, and `fingerprint` and `ca` when
 * the bus's certificate is to be pinned — a mesh credential file is one), and its urls, checked:
 * a password must not cross the network in clear, so a url beyond loopback needs TLS unless
 * `--insecure` is said.
 */
import { stat } from "node:fs/promises";
import { z } from "zod";
import { ErrorCode, FINGERPRINT_PATTERN, MeshError, issuesText } from "@mesh/protocol";
import { readJson } from "../mesh-root.js";

/** Where `mesh up` keeps the foreign bus's login in the root's credentials folder. */
export const FOREIGN_LOGIN_FILE = "bus.json";

const BusLogin = z.object({
  user: z.string().min(1),
  password: z.string().min(1),
  fingerprint: z.string().regex(FINGERPRINT_PATTERN).optional(),
  ca: z.string().min(1).optional(),
});
export type BusLogin = z.infer<typeof BusLogin>;

/** Reads the login file; refuses one others can read, or one that is not a login. */
export async function readBusLogin(path: string, how: { given: boolean }): Promise<BusLogin> {
  const hint = how.given
    ? "give the file the bus's operator made for the mesh"
    : "the root ran on a foreign bus: give --bus URLS --bus-credential FILE again";
  const mode = await stat(path).then(
    (s) => s.mode & 0o777,
    () => undefined,
  );
  if (mode === undefined) {
    throw new MeshError(ErrorCode.CREDENTIAL_INVALID, `there is no bus login at ${path}; ${hint}`, {
      path,
    });
  }
  if ((mode & 0o077) !== 0) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_EXPOSED,
      `the bus login ${path} has mode ${mode.toString(8).padStart(4, "0")}, so others on this machine can read its password; run \`chmod 600 ${path}\``,
      { path },
    );
  }
  const parsed = BusLogin.safeParse(await readJson(path));
  if (!parsed.success) {
    const problems = issuesText(parsed.error);
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `${path} is not a bus login (JSON with "user" and "password", and "fingerprint" and "ca" to pin the bus's certificate): ${problems}; ${hint}`,
      { path },
    );
  }
  const { user, password, fingerprint, ca } = parsed.data;
  if ((fingerprint === undefined) !== (ca === undefined)) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `${path} has a "fingerprint" without a "ca" or the other way round; a pin needs both (the certificate, and its SHA-256 fingerprint)`,
      { path },
    );
  }
  return { user, password, ...(fingerprint === undefined ? {} : { fingerprint, ca }) };
}

/**
 * The urls of `--bus`, split and checked. One beyond loopback without TLS (a `tls://` url, or a
 * pinned certificate) is refused with BUS_UNPROTECTED unless `insecure`.
 */
export function checkForeignUrls(list: string, login: BusLogin, insecure: boolean): string[] {
  const urls = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const bad = urls.find((u) => parseBusUrl(u) === undefined);
  if (urls.length === 0 || bad !== undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--bus ${JSON.stringify(bad ?? list)} is not a bus url; give nats://host:port or tls://host:port, several joined by commas`,
    );
  }
  const clear = urls.filter((u) => {
    const url = parseBusUrl(u);
    return url !== undefined && !isLoopback(url.hostname) && url.protocol !== "tls:";
  });
  if (clear.length > 0 && login.fingerprint === undefined && !insecure) {
    throw new MeshError(
      ErrorCode.BUS_UNPROTECTED,
      `--bus ${clear.join(",")} is beyond this machine and not TLS, so the login's password would cross the network in clear; ` +
        "use tls:// urls (or a login with the bus certificate's fingerprint and ca), or say --insecure if the network is yours alone",
    );
  }
  return urls;
}

/** A bus url as a URL (a bare host:port is read as nats://), or undefined. */
export function parseBusUrl(value: string): URL | undefined {
  const text = /^[a-z]+:\/\//.test(value) ? value : `nats://${value}`;
  try {
    const url = new URL(text);
    if (!["nats:", "tls:"].includes(url.protocol) || url.hostname === "") return undefined;
    return url;
  } catch {
    return undefined;
  }
}

/** Whether a host name or address is this machine's loopback. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || /^127\.\d+\.\d+\.\d+$/.test(bare);
}
