/**
 * What a connection logs in with, each time it does: the credential it was opened with, or a
 * renewed one (decision 0150). A signed user's JWT expires; the server closes a connection whose
 * JWT expires, and the client logs in again at once — with whatever this holds then. So a renewed
 * credential is picked up by the next login, with no restart and no reconnect of its own: one
 * login per lifetime, at the old JWT's expiry.
 *
 * A credential file (`follow`) is read again at a login when it changed since it was last read:
 * the host writes a module's renewed credential over its file, and the process logs in with it.
 */
import { readFileSync, statSync } from "node:fs";
import type { Authenticator } from "@nats-io/nats-core";
import { Credential, ErrorCode, MeshError } from "@mesh/protocol";
import { nodeKeyPair, type SigningKeyPair } from "./server/nkey-codec.js";

export class BusLogin {
  #credential: Credential;
  #file: { readonly path: string; stamp: string } | undefined;
  /** Key pairs by seed: derived once, not at every login. */
  #keys: { readonly seed: string; readonly pair: SigningKeyPair } | undefined;
  /** How many times the server asked this connection to log in (the first, and reconnects). */
  logins = 0;

  constructor(credential: Credential, follow?: string) {
    this.#credential = credential;
    if (follow !== undefined) this.#file = { path: follow, stamp: stampOf(follow) ?? "" };
  }

  /** The credential the next login uses: the followed file read again when it changed. */
  get credential(): Credential {
    this.#readFile();
    return this.#credential;
  }

  /** The credential held now, without looking at the file. */
  get held(): Credential {
    return this.#credential;
  }

  /**
   * Logs in with `credential` from the next login on. It must be the same principal (user, node
   * and module): a connection's inbox and name are its own.
   */
  renew(credential: Credential): void {
    const had = this.#credential;
    if (credential.node !== had.node || credential.module !== had.module) {
      throw new MeshError(
        ErrorCode.CREDENTIAL_INVALID,
        `a renewed credential is of ${credential.node}.${credential.module}, and this connection is ${had.node}.${had.module}; connect again with it instead`,
      );
    }
    this.#credential = credential;
  }

  /** The client's authenticator: a signed user's JWT, and the nonce signed with its seed. */
  authenticator(): Authenticator {
    return (nonce?: string) => {
      this.logins += 1;
      const credential = this.credential;
      const { jwt, seed } = credential;
      if (jwt === undefined || seed === undefined) {
        return { user: credential.user, pass: credential.password ?? "" };
      }
      // Node's Ed25519: the client library's own (pure JavaScript) took ~45 ms of every CLI
      // verb's start to derive the key on a loaded machine; this takes ~1 ms.
      if (this.#keys?.seed !== seed) this.#keys = { seed, pair: nodeKeyPair(seed) };
      const keys = this.#keys.pair;
      const sig =
        nonce === undefined || nonce === ""
          ? ""
          : Buffer.from(keys.sign(new TextEncoder().encode(nonce))).toString("base64");
      return { jwt, nkey: keys.getPublicKey(), sig };
    };
  }

  /**
   * Takes the followed file's credential when the file changed since it was last read. A file
   * that does not read as a credential of this principal is left: the one held stays in use.
   */
  #readFile(): void {
    const file = this.#file;
    if (file === undefined) return;
    const stamp = stampOf(file.path);
    if (stamp === undefined || stamp === file.stamp) return;
    file.stamp = stamp;
    try {
      const parsed = Credential.safeParse(JSON.parse(readFileSync(file.path, "utf8")));
      if (parsed.success) this.renew(parsed.data);
    } catch {
      // Half a file cannot be read here (it is replaced whole); anything else waits for the next.
    }
  }
}

/** What tells a changed file: its modification time, size and inode. */
function stampOf(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.mtimeMs}:${s.size}:${s.ino}`;
  } catch {
    return undefined;
  }
}
