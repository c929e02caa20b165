/**
 * The host's own credential as its composition carries it (accounts mode, decision 0150): the
 * controller renews the host's JWT before it expires, and gives it a new key when its grant
 * moves, and seals it to the node's key in `mesh-composed.<node>`. The host takes it from there:
 * writes it over its credential file (the next start logs in with it) and has its connection
 * log in with it from the next login on — the server closes the connection when the old JWT
 * expires or its key is revoked, and the client logs in again at once.
 */
import type { KeyObject } from "node:crypto";
import { unseal, writeCredential, type MeshBus } from "@mesh/bus";
import {
  Credential,
  Principal,
  hostCredentialContext,
  issuesText,
  type Composed,
} from "@mesh/protocol";

export interface OwnCredentialOptions {
  readonly node: string;
  readonly privateKey: KeyObject;
  /** The credential file the host was started with; absent: given in memory (tests). */
  readonly path?: string;
  readonly log: (line: string) => void;
}

export class OwnCredential {
  readonly #o: OwnCredentialOptions;
  /** The sealed credential last taken, so each is taken once. */
  #taken: string | undefined;

  constructor(options: OwnCredentialOptions) {
    this.#o = options;
  }

  /** Takes the composition's credential when it is one not taken yet; says what went wrong. */
  async take(composed: Composed, bus: MeshBus | undefined): Promise<void> {
    const sealed = composed.hostCredential;
    if (sealed === undefined || sealed === this.#taken) return;
    const { node } = this.#o;
    let credential: Credential;
    try {
      const text = unseal(this.#o.privateKey, sealed, hostCredentialContext(node)).toString();
      const parsed = Credential.safeParse(JSON.parse(text));
      if (!parsed.success) throw new Error(issuesText(parsed.error));
      credential = parsed.data;
    } catch (error) {
      this.#o.log(
        `the composition's host credential does not open as this node's (${(error as Error).message}); the one held stays in use`,
      );
      return;
    }
    if (credential.node !== node || credential.module !== Principal.host) {
      this.#o.log(
        `the composition's host credential is ${credential.node}.${credential.module}'s, not ${node}.host's; the one held stays in use`,
      );
      return;
    }
    if (credential.jwt === bus?.credential.jwt) {
      this.#taken = sealed; // the one it logs in with already (the join's)
      return;
    }
    if (this.#o.path !== undefined) await writeCredential(this.#o.path, credential);
    bus?.renewCredential(credential);
    this.#taken = sealed;
    this.#o.log(`took the host credential the controller renewed (${expiryOf(credential)})`);
  }
}

/** What the log says of a credential's expiry. */
function expiryOf(credential: Credential): string {
  const body = credential.jwt?.split(".")[1];
  if (body === undefined) return "no JWT";
  const exp = (JSON.parse(Buffer.from(body, "base64url").toString()) as { exp?: unknown }).exp;
  return typeof exp === "number" ? `expires ${new Date(exp * 1000).toISOString()}` : "no expiry";
}
