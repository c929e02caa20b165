/**
 * The mesh account's JWT, each one issued in a later second than the one before it (decision
 * 0181), and the newest kept in a file (`<root>/accounts/account.jwt`).
 *
 * A full resolver takes an account JWT over the one it holds when it was issued later — and also
 * when it was issued in the same second: then whichever arrives last wins (nats-server 2.9.10,
 * `DirJWTStore.saveIfNewer`). Two JWTs of one second are a coin toss: a server that was down
 * while the newer went out comes back with the older, answers another server's sync with it, and
 * that server takes it, so the revocation the newer one carried is undone on every server, for
 * good once their hashes agree (measured: three of three servers let the revoked user in 30 s
 * after the restart). So each JWT is issued a second after the last one — a second or a few ahead
 * of the clock in a burst, which the server does not check — and the newest is kept, written
 * before it is pushed: the next issue counts from it (also after a restart of the controller),
 * and a server `mesh up` starts again preloads it, refusing the revoked from its first second.
 */
import { readFile } from "node:fs/promises";
import { writeFileAtomic } from "@mesh/kit";
import { jwtIssuedAt, meshAccountJwt, publicKeyOf, type AccountKeys } from "./accounts.js";
import type { Revocations } from "./revocations.js";

/**
 * The kept JWT at `path` and its issue second, when it is the mesh account's; undefined when
 * there is none (a root from before this) or it is not one (then a new one is issued over it).
 */
export async function readKeptAccountJwt(
  path: string,
  keys: AccountKeys,
): Promise<{ readonly jwt: string; readonly issuedAt: number } | undefined> {
  let jwt: string;
  try {
    jwt = (await readFile(path, "utf8")).trim();
  } catch {
    return undefined;
  }
  try {
    const body = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as {
      sub?: unknown;
    };
    if (body.sub !== publicKeyOf(keys.account)) return undefined;
    return { jwt, issuedAt: jwtIssuedAt(jwt) };
  } catch {
    return undefined;
  }
}

/**
 * Issues the mesh account's JWT with `revocations` in the second after `after` (or now, when
 * later) and keeps it at `path`; resolves once it is on disk.
 */
export async function keepNextAccountJwt(
  path: string,
  keys: AccountKeys,
  revocations: Revocations,
  after: number,
): Promise<{ readonly jwt: string; readonly issuedAt: number }> {
  const issuedAt = Math.max(Math.floor(Date.now() / 1000), after + 1);
  const jwt = await meshAccountJwt(keys, revocations, issuedAt);
  await writeFileAtomic(path, `${jwt}\n`, { mode: 0o600 });
  return { jwt, issuedAt };
}
