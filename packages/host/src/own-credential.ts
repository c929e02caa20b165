/**
 * The host's own credential as its composition carries it (accounts mode, decision 0150): the
 * controller renews the host's JWT before it expires, and gives it a new key when its grant
 * moves, and seals it to the node's key in `mesh-composed.<node>`. The host takes it from there:
 * writes it over its credential file (the next start logs in with it) and has its connection
 * log in with it from the next login on — the server closes the connection when the old JWT
 * expires or its key is revoked, and the client logs in again at once.
 *
 * A host away for longer than its JWT lives (stopped, cut off) cannot log in to read it: its
 * credential carries the node's renewal login, which may only ask `mesh.renew.<node>`. When the
 * bus refuses its login, the host asks with it; the answer is its current credential sealed to
 * the node's key, written over its credential file, which its connection logs in with next.
 */
import type { KeyObject } from "node:crypto";
import { MeshBus, readCredential, request, unseal, writeCredential } from "@mesh/bus";
import {
  Credential,
  Principal,
  RenewAnswer,
  hostCredentialContext,
  issuesText,
  renewSubject,
  type Composed,
} from "@mesh/protocol";

/** How long after one ask for a renewed credential the next may go (the bus refuses often). */
const ASK_EVERY_MS = 5_000;

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
  /** When the last ask for a renewed credential went, and whether one is out. */
  #askedAt = 0;
  #asking = false;

  constructor(options: OwnCredentialOptions) {
    this.#o = options;
  }

  /** Takes the composition's credential when it is one not taken yet; says what went wrong. */
  async take(composed: Composed, bus: MeshBus | undefined): Promise<void> {
    const sealed = composed.hostCredential;
    if (sealed === undefined || sealed === this.#taken) return;
    const credential = this.#open(sealed, "the composition's host credential");
    if (credential === undefined) return;
    if (credential.jwt === bus?.credential.jwt) {
      this.#taken = sealed; // the one it logs in with already (the join's)
      return;
    }
    if (this.#o.path !== undefined) await writeCredential(this.#o.path, credential);
    bus?.renewCredential(credential);
    this.#taken = sealed;
    this.#o.log(`took the host credential the controller renewed (${expiryOf(credential)})`);
  }

  /**
   * The bus refused the host's login: asks with the renewal login for its current credential,
   * one ask at a time and at most every {@link ASK_EVERY_MS}. Only with a credential file.
   */
  renewWhenRefused(signal: AbortSignal): void {
    const path = this.#o.path;
    if (path === undefined || this.#asking || Date.now() - this.#askedAt < ASK_EVERY_MS) return;
    this.#asking = true;
    this.#askedAt = Date.now();
    void this.#ask(path, signal)
      .catch((error: unknown) => {
        if (!signal.aborted) {
          this.#o.log(`could not ask for a renewed host credential: ${(error as Error).message}`);
        }
      })
      .finally(() => {
        this.#asking = false;
      });
  }

  async #ask(path: string, signal: AbortSignal): Promise<void> {
    const held = await readCredential(path);
    const { node } = this.#o;
    if (held.renewal === undefined) return; // a credential from before expiring JWTs
    const login: Credential = {
      servers: held.servers,
      user: `${node}.${Principal.renewal}`,
      ...held.renewal,
      node,
      module: Principal.renewal,
      ...(held.fingerprint === undefined ? {} : { fingerprint: held.fingerprint }),
      ...(held.ca === undefined ? {} : { ca: held.ca }),
    };
    await using bus = await MeshBus.connect(login, { say: () => undefined, signal });
    const answer = RenewAnswer.parse(await request(bus, renewSubject(node), {}, { signal }));
    const credential = this.#open(answer.sealed, "the renewed host credential");
    if (credential === undefined) return;
    await writeCredential(path, credential);
    this.#o.log(
      `the bus refused this host's login; asked for its credential (${expiryOf(credential)})`,
    );
  }

  /** `sealed` opened as this node's host credential, or undefined (said) when it is not. */
  #open(sealed: string, what: string): Credential | undefined {
    const { node } = this.#o;
    let credential: Credential;
    try {
      const text = unseal(this.#o.privateKey, sealed, hostCredentialContext(node)).toString();
      const parsed = Credential.safeParse(JSON.parse(text));
      if (!parsed.success) throw new Error(issuesText(parsed.error));
      credential = parsed.data;
    } catch (error) {
      this.#o.log(
        `${what} does not open as this node's (${(error as Error).message}); the one held stays in use`,
      );
      return undefined;
    }
    if (credential.node !== node || credential.module !== Principal.host) {
      this.#o.log(
        `${what} is ${credential.node}.${credential.module}'s, not ${node}.host's; the one held stays in use`,
      );
      return undefined;
    }
    return credential;
  }
}

/** What the log says of a credential's expiry. */
function expiryOf(credential: Credential): string {
  const body = credential.jwt?.split(".")[1];
  if (body === undefined) return "no JWT";
  const exp = (JSON.parse(Buffer.from(body, "base64url").toString()) as { exp?: unknown }).exp;
  return typeof exp === "number" ? `expires ${new Date(exp * 1000).toISOString()}` : "no expiry";
}
