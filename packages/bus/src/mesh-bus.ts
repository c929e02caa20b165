/**
 * A connection to the bus as one credential: its user and password, its own inbox prefix,
 * reconnecting forever, and TLS pinned to the server certificate's fingerprint when the
 * credential names one. Everything else in the mesh reaches NATS through this class.
 */
import type { PeerCertificate } from "node:tls";
import { connect } from "@nats-io/transport-node";
import {
  AuthorizationError,
  type Authenticator,
  type Msg,
  type NatsConnection,
} from "@nats-io/nats-core";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { ErrorCode, MeshError, isMeshError, type Credential } from "@mesh/protocol";
import { abortable, causeChain, jsonOf, toMeshError } from "./bus-errors.js";
import { Backoff, delay } from "@mesh/kit";
import { credentialInbox, readCredential } from "./credential-file.js";
import { BusLogin } from "./bus-login.js";
import { leastRecentlyDialled, liveness } from "./liveness.js";
import {
  ConnectionStates,
  toBusEvent,
  type BusEvent,
  type ConnectionListener,
  type ConnectionState,
} from "./connection-state.js";

export interface ConnectOptions {
  /** The connection's name as the server shows it; defaults to `<node>.<module>`. */
  readonly name?: string;
  /** Keep trying when the bus is not up yet, instead of failing the first attempt. */
  readonly waitForBus?: boolean;
  /** How long one connection attempt may take, in ms. */
  readonly timeoutMs?: number;
  /**
   * How often the connection asks the server for a pong, in ms; two unanswered in a row end it
   * and it reconnects, to another server of a cluster when there is one. Default 2 s.
   */
  readonly pingIntervalMs?: number;
  /**
   * Where the connection says what a daemon's operator must know: a login the bus refuses (it is
   * retried, forever, with backoff), and the connection coming back. Defaults to stderr.
   */
  readonly say?: (line: string) => void;
  readonly signal?: AbortSignal;
  /**
   * A credential file to log in with as it changes: read again at a login when it changed (a
   * renewed credential the host wrote over it; decision 0150). `connectWithFile` follows its file.
   */
  readonly follow?: string;
  /**
   * Told each time the bus refuses the login (at the first connection while waiting for the
   * bus, and at reconnects): a host asks for its renewed credential then (decision 0150).
   */
  readonly onRefused?: () => void;
}

export interface SubscribeOptions {
  /** Ends the subscription: the iteration finishes. */
  readonly signal?: AbortSignal;
  /** A queue group: each message goes to one subscriber of the group. */
  readonly queue?: string;
}

/** A message as a subscriber receives it. */
export interface BusMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Where the sender wants an answer; undefined when it wants none. */
  readonly reply: string | undefined;
  /** The body as JSON; INVALID_VALUE when it is not JSON. */
  json(): unknown;
}

/**
 * The raw NATS handles of a connection: for this package's helpers, and for what only a sibling
 * package's internals or a test may need (`@mesh/bus/internal`). Everything else uses the helpers.
 */
export interface NatsHandles {
  readonly nc: NatsConnection;
  /** JetStream without the `$JS.API.INFO` check, which no module credential is granted. */
  readonly js: JetStreamClient;
  readonly kvm: Kvm;
}

const handles = new WeakMap<MeshBus, NatsHandles>();

/** The raw NATS handles of `bus`. */
export function natsOf(bus: MeshBus): NatsHandles {
  const found = handles.get(bus);
  if (found === undefined)
    throw new MeshError(ErrorCode.INTERNAL, "not a MeshBus made by connect()");
  return found;
}

export class MeshBus implements AsyncDisposable {
  readonly #login: BusLogin;
  readonly #nc: NatsConnection;
  readonly #states: ConnectionStates;
  #closed = false;

  private constructor(
    login: BusLogin,
    nc: NatsConnection,
    say: (line: string) => void,
    onRefused?: () => void,
  ) {
    this.#login = login;
    this.#nc = nc;
    this.#states = new ConnectionStates(nc.getServer(), (error) =>
      say(`a follower of the connection's state failed: ${(error as Error).message}`),
    );
    const js = jetstream(nc, { checkAPI: false });
    handles.set(this, { nc, js, kvm: new Kvm(js) });
    void this.#follow(say, onRefused);
  }

  /** The connection's state now: reached or away, since when, and the last outage. */
  get connection(): ConnectionState {
    return this.#states.value;
  }

  /**
   * Calls `listener` at each change of the connection's status (away, back, closed) until the
   * signal aborts or the returned function is called: what a daemon does when the bus comes back
   * (say again what a lost server forgot, ask again) hangs here.
   */
  onConnection(listener: ConnectionListener, options: { signal?: AbortSignal } = {}): () => void {
    return this.#states.onChange(listener, options);
  }

  /** The credential this connection logs in with (the latest renewed one). */
  get credential(): Credential {
    return this.#login.held;
  }

  /**
   * Logs in with `credential` from the next login on (the same principal, renewed): the server
   * closes the connection when the JWT it logged in with expires, and the client logs in again
   * at once with this one. Nothing reconnects before then.
   */
  renewCredential(credential: Credential): void {
    this.#login.renew(credential);
  }

  /**
   * The one follower of the client's status events: keeps the connection's state, says a refused
   * login once per outage (the client retries it forever: a restarted bus may know the user only
   * once the controller has written its list) and says when the connection is back, so a process
   * that cannot reach the bus is never silent about it.
   */
  async #follow(say: (line: string) => void, onRefused?: () => void): Promise<void> {
    const who = `${this.credential.node}.${this.credential.module}`;
    let refused = false;
    const statuses = this.#nc.status();
    // The iteration ends when the connection closes, by close() or the server refusing it.
    void this.#nc.closed().then(() => this.#states.close());
    for await (const status of statuses) {
      this.#states.apply(status);
      if (status.type === "error" && status.error instanceof AuthorizationError) onRefused?.();
      if (status.type === "error" && status.error instanceof AuthorizationError && !refused) {
        refused = true;
        say(
          `the bus refused the login of ${who} (${status.error.message}); retrying with backoff until it is known again`,
        );
      } else if (status.type === "reconnect") {
        if (refused) say(`the bus accepts ${who} again (${status.server})`);
        refused = false;
      }
    }
  }

  /**
   * Connects with a credential. Fails at once (or, with `waitForBus`, keeps trying until the bus
   * answers or the signal aborts) with CONNECT_FAILED; a server whose certificate is not the one
   * the credential pins is refused with TLS_PIN_MISMATCH, also with `waitForBus`: retrying does
   * not change a certificate. Once connected, the connection reconnects forever.
   */
  static async connect(credential: Credential, options: ConnectOptions = {}): Promise<MeshBus> {
    const doing = `connecting to the bus at ${credential.servers.join(", ")} as ${credential.node}.${credential.module}`;
    const say = options.say ?? ((line: string) => process.stderr.write(`mesh-bus: ${line}\n`));
    const backoff = new Backoff({ initialMs: RETRY_FIRST_MS, maxMs: RETRY_MAX_MS });
    const login = new BusLogin(credential, options.follow);
    for (;;) {
      try {
        const nc = await connectOnce(login, options, doing);
        return new MeshBus(login, nc, say, options.onRefused);
      } catch (error) {
        if (isRefusedLogin(error)) options.onRefused?.();
        if (options.waitForBus !== true || !isRetryable(error)) throw error;
        // A refused login is retried too while waiting: a bus that has just started may know
        // this user only a moment later. Said once, not on every attempt.
        if (backoff.failures === 0 && isRefusedLogin(error)) {
          say(`${doing}: the bus refused the login (${(error as Error).message}); retrying`);
        }
      }
      await waitOrAbort(backoff.next(), options.signal, doing);
    }
  }

  /** Reads a credential file and connects with it. */
  static async connectWithFile(path: string, options: ConnectOptions = {}): Promise<MeshBus> {
    return MeshBus.connect(await readCredential(path), { follow: path, ...options });
  }

  /**
   * Subscribes to `subject` at once and hands its messages until the signal aborts or the loop
   * is left. A subscription the credential is not granted is refused by the server, and the
   * iteration then throws PERMISSION_DENIED (the connection stays up). The server may also drop
   * a subscription later, when a reload narrows the credential's grants: same error. With a
   * signal that has already aborted, nothing is subscribed and the iteration ends at once.
   */
  subscribe(
    subject: string,
    options: SubscribeOptions = {},
  ): AsyncGenerator<BusMessage, void, undefined> {
    const doing = `subscribing to ${subject}${options.queue === undefined ? "" : ` in queue ${options.queue}`}`;
    if (options.signal?.aborted === true) return (async function* () {})();
    const sub = this.#nc.subscribe(
      subject,
      options.queue === undefined ? {} : { queue: options.queue },
    );
    const stop = (): void => sub.unsubscribe();
    options.signal?.addEventListener("abort", stop, { once: true });
    const messages = sub[Symbol.asyncIterator]();
    return (async function* () {
      try {
        for (;;) {
          let next: IteratorResult<Msg>;
          try {
            next = await messages.next();
          } catch (error) {
            throw toMeshError(error, { doing, subject });
          }
          if (next.done === true) return;
          yield toBusMessage(next.value, doing);
        }
      } finally {
        options.signal?.removeEventListener("abort", stop);
        sub.unsubscribe();
      }
    })();
  }

  /**
   * The connection's state changes from this call on, until it closes or the loop is left.
   * Listening starts at the call, not at the first `next()`: a disconnect between the two is
   * kept for the iteration. Iterate what this returns; an iterator never started keeps its
   * events until the connection closes.
   */
  events(): AsyncGenerator<BusEvent> {
    const statuses = this.#nc.status();
    return (async function* () {
      for await (const status of statuses) {
        const event = toBusEvent(status);
        if (event !== undefined) yield event;
      }
    })();
  }

  /** Resolves when the connection is closed for good (by close(), or the server refusing it). */
  async closed(): Promise<void> {
    await this.#nc.closed();
  }

  get isClosed(): boolean {
    return this.#closed || this.#nc.isClosed();
  }

  readonly #beforeClose = new Set<() => void>();

  /**
   * Registers what must stop before the connection closes (a watch's consumer): the client keeps
   * a push consumer's heartbeat timer running after its connection closed, which keeps the
   * process alive, so every watch is stopped first. Returns the function that unregisters it.
   */
  beforeClose(stop: () => void): () => void {
    this.#beforeClose.add(stop);
    return () => this.#beforeClose.delete(stop);
  }

  /** Stops every watch, flushes what was published and closes. Closing twice is harmless. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const stop of [...this.#beforeClose]) {
      try {
        stop();
      } catch {
        // a watch that cannot be stopped is gone already
      }
    }
    this.#beforeClose.clear();
    try {
      if (!this.#nc.isClosed()) await this.#nc.drain();
    } catch {
      await this.#nc.close();
    }
    this.#states.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Waits between attempts of `MeshBus.connect` with `waitForBus`. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 2_000;

/**
 * The TLS errors that say the server's certificate does not verify against the trusted
 * authorities. With a pin, the pinned certificate is the authority (`ca`), so these mean the
 * server presented another certificate: Node checks the identity, and so the pin, only after the
 * chain verified (docs/nats.md §4).
 */
const UNTRUSTED_CERTIFICATE = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
]);

/**
 * How a credential logs in: a signed user JWT and its nkey seed (accounts mode, decision 0080),
 * as the login holds it at each login, or the user and password of the server's users list.
 */
function authOf(
  login: BusLogin,
): { authenticator: Authenticator } | { user: string; pass: string } {
  const credential = login.held;
  if (credential.jwt !== undefined && credential.seed !== undefined) {
    return { authenticator: login.authenticator() };
  }
  return { user: credential.user, pass: credential.password ?? "" };
}

/** One connection attempt, without the client's own retries, mapped to a MeshError. */
async function connectOnce(
  login: BusLogin,
  options: ConnectOptions,
  doing: string,
): Promise<NatsConnection> {
  const credential = login.credential;
  let pinMismatch: string | undefined;
  const tls =
    credential.fingerprint === undefined
      ? undefined
      : {
          // Node checks the identity only after the chain verifies, so the pinned certificate
          // must also be the trusted authority (docs/nats.md §4): never rejectUnauthorized:false.
          ...(credential.ca === undefined ? {} : { ca: credential.ca }),
          checkServerIdentity: (_host: string, cert: PeerCertificate): Error | undefined => {
            if (cert.fingerprint256 === credential.fingerprint) return undefined;
            pinMismatch = cert.fingerprint256;
            return new Error(
              `the bus's certificate fingerprint ${cert.fingerprint256} is not the pinned ${credential.fingerprint ?? ""}`,
            );
          },
        };
  const inbox = credentialInbox(credential);
  const connecting = connect({
    servers: credential.servers,
    ...authOf(login),
    name: options.name ?? `${credential.node}.${credential.module}`,
    ...(inbox === undefined ? {} : { inboxPrefix: inbox }),
    reconnect: true,
    maxReconnectAttempts: -1,
    // The client's default gives up for good after two refused logins in a row; a bus that was
    // restarted refuses users it does not know yet, so a daemon must keep trying (issue 15).
    ignoreAuthErrorAbort: true,
    // Waiting for the bus is MeshBus.connect's loop, which sees every failure and the signal.
    waitOnFirstConnect: false,
    timeout: options.timeoutMs ?? 5_000,
    ...liveness(options.pingIntervalMs),
    reconnectToServer: leastRecentlyDialled,
    ...(tls === undefined ? {} : { tls }),
  });
  try {
    return await abortable(connecting, options.signal, doing);
  } catch (error) {
    if (isMeshError(error, ErrorCode.ABORTED)) {
      // The attempt goes on; a connection it still makes must not be left open.
      connecting.then(
        (late) => late.close(),
        () => undefined,
      );
      throw error;
    }
    if (pinMismatch !== undefined) {
      throw new MeshError(
        ErrorCode.TLS_PIN_MISMATCH,
        `${doing}: the server presented a certificate with fingerprint ${pinMismatch}, but the credential pins ${credential.fingerprint ?? ""}; ` +
          `this is not the mesh's bus, or its certificate changed — if the change is yours, issue new credentials with the new fingerprint`,
        { cause: error },
      );
    }
    const tlsCode = tlsErrorCode(error);
    if (credential.fingerprint !== undefined && tlsCode !== undefined) {
      throw new MeshError(
        ErrorCode.TLS_PIN_MISMATCH,
        `${doing}: the server presented a certificate that is not the pinned ${credential.fingerprint} (${tlsCode}: it does not verify against ` +
          (credential.ca === undefined
            ? `the public authorities, and the credential names no ca); if the bus's certificate is self-signed, the credential must carry it as ca`
            : `the certificate the credential trusts); this is not the mesh's bus, or its certificate changed — if the change is yours, issue new credentials with the new fingerprint`),
        { cause: error },
      );
    }
    const mapped = toMeshError(error, { doing });
    if (mapped.code !== ErrorCode.INTERNAL) throw mapped;
    throw new MeshError(
      ErrorCode.CONNECT_FAILED,
      `${doing}: ${(error as Error).message}; check that the bus is running and the url is right`,
      { cause: error },
    );
  }
}

/** The Node TLS code of a certificate that did not verify, anywhere in the cause chain. */
function tlsErrorCode(error: unknown): string | undefined {
  return causeChain(error)
    .map((e) => (e as NodeJS.ErrnoException).code)
    .find((code) => code !== undefined && UNTRUSTED_CERTIFICATE.has(code));
}

/**
 * Whether `MeshBus.connect` should try again while it waits for the bus: a bus that is not up
 * yet may come, and one that has just started may know this user a moment later; a certificate
 * or an abort will not change by waiting.
 */
function isRetryable(error: unknown): boolean {
  if (!isMeshError(error)) return false;
  if (isRefusedLogin(error)) return true;
  if (error.code !== ErrorCode.CONNECT_FAILED && error.code !== ErrorCode.TIMEOUT) return false;
  return tlsErrorCode(error) === undefined;
}

function isRefusedLogin(error: unknown): boolean {
  return causeChain(error).some((e) => e instanceof AuthorizationError);
}

/** Resolves after `ms`, or rejects with ABORTED when the signal fires first. */
async function waitOrAbort(
  ms: number,
  signal: AbortSignal | undefined,
  doing: string,
): Promise<void> {
  if (await delay(ms, signal === undefined ? {} : { signal })) return;
  throw new MeshError(ErrorCode.ABORTED, `${doing}: aborted by the caller`, {
    cause: signal?.reason,
  });
}

function toBusMessage(msg: Msg, doing: string): BusMessage {
  return {
    subject: msg.subject,
    data: msg.data,
    reply: msg.reply === undefined || msg.reply === "" ? undefined : msg.reply,
    json: () =>
      jsonOf(
        msg,
        ErrorCode.INVALID_VALUE,
        (why) => `${doing}: a message on ${msg.subject} is not JSON (${why}); its sender is broken`,
        { subject: msg.subject },
      ),
  };
}
