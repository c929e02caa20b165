/**
 * Turns what the NATS client throws into MeshErrors with a code, so callers branch on codes and
 * never on the client's classes or prose. The client's error stays chained as `cause`.
 */
import {
  AuthorizationError,
  NoRespondersError,
  PermissionViolationError,
  TimeoutError,
} from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError, JetStreamError } from "@nats-io/jetstream";
import { ErrorCode, MeshError, type MeshErrorFields } from "@mesh/protocol";
import { retry } from "@mesh/kit";

/** What was being done, for the message: "reading mesh-have key n1.hello". */
export interface ErrorContext extends Omit<MeshErrorFields, "cause"> {
  readonly doing: string;
}

/**
 * The JSON a message carries; one that is not JSON is a MeshError of `code` with what `say`
 * makes of the parser's reason, the parser's error chained.
 */
export function jsonOf(
  msg: { json<T>(): T },
  code: ErrorCode,
  say: (why: string) => string,
  fields: Omit<MeshErrorFields, "cause"> = {},
): unknown {
  try {
    return msg.json();
  } catch (error) {
    throw new MeshError(code, say((error as Error).message), { ...fields, cause: error });
  }
}

/** An error and the errors it chains as `cause`, eight deep at the most (so a cycle ends). */
export function causeChain(error: unknown): Error[] {
  const chain: Error[] = [];
  for (let e: unknown = error; e instanceof Error && chain.length < 8; e = e.cause) chain.push(e);
  return chain;
}

/** Finds a permission violation anywhere in an error's cause chain. */
function permissionViolation(error: unknown): PermissionViolationError | undefined {
  return causeChain(error).find((e) => e instanceof PermissionViolationError);
}

export function toMeshError(error: unknown, context: ErrorContext): MeshError {
  if (error instanceof MeshError) return error;
  const { doing, ...fields } = context;
  const detail = error instanceof Error ? error.message : String(error);
  const make = (code: ErrorCode, message: string) =>
    new MeshError(code, message, { ...fields, cause: error });

  const violation = permissionViolation(error);
  if (violation !== undefined) {
    return make(
      ErrorCode.PERMISSION_DENIED,
      `${doing}: the bus refused to ${violation.operation === "subscription" ? "subscribe" : "publish"} on ${JSON.stringify(violation.subject)} for this credential; ` +
        `the credential is not granted it — declare what the module needs in its manifest (states, reads, calls) so the broker grants it`,
    );
  }
  if (error instanceof AuthorizationError) {
    return make(
      ErrorCode.CONNECT_FAILED,
      `${doing}: the bus refused the credential's user and password (${detail}); the credential is stale or revoked — ask the controller for a new one`,
    );
  }
  if (error instanceof JetStreamApiError) {
    const code = error.code;
    if (code === JetStreamApiCodes.StreamNotFound || code === JetStreamApiCodes.NoMessageFound) {
      return make(
        ErrorCode.NOT_FOUND,
        `${doing}: not found (${detail}); create it with \`mesh up\` or check the name`,
      );
    }
    if (code === JetStreamApiCodes.StreamWrongLastSequence) {
      return make(
        ErrorCode.CONFLICT,
        `${doing}: another writer changed it first (${detail}); read it again and retry`,
      );
    }
  }
  if (error instanceof JetStreamError && /stream not found/i.test(detail)) {
    return make(
      ErrorCode.NOT_FOUND,
      `${doing}: not found (${detail}); create it with \`mesh up\` or check the name`,
    );
  }
  if (
    error instanceof NoRespondersError ||
    (error instanceof Error && error.cause instanceof NoRespondersError)
  ) {
    return make(
      ErrorCode.NOT_FOUND,
      `${doing}: nothing on the bus answers there (${detail}); the bucket or service does not exist or is not running`,
    );
  }
  if (
    error instanceof TimeoutError ||
    (error instanceof Error && error.cause instanceof TimeoutError)
  ) {
    return make(
      ErrorCode.TIMEOUT,
      `${doing}: the bus did not answer in time (${detail}); check that the bus is up and retry`,
    );
  }
  if (error instanceof Error && error.name === "AbortError") {
    return make(ErrorCode.ABORTED, `${doing}: aborted by the caller`);
  }
  return make(ErrorCode.INTERNAL, `${doing}: ${detail}`);
}

/**
 * JetStream's "system temporarily unavailable" (10008): the server's JetStream meta group has no
 * leader (nats-server 2.9.10 `isLeaderless`), as while a cluster elects one after its leader was
 * cut off; the request did nothing.
 */
const JS_CLUSTER_NOT_AVAILABLE = 10008;

/**
 * Whether an error is the bus being briefly unable to answer, not a refusal: JetStream's API has
 * no responder for a moment while the server reloads its users list (every grant change does
 * that) or while a cluster elects a stream leader (docs/nats.md §5), and says it is unavailable
 * while a cluster elects its meta leader. "No responders" also means "no such bucket", so retries
 * are bounded.
 */
export function isTransient(error: unknown): boolean {
  return causeChain(error).some(
    (e) =>
      e instanceof NoRespondersError ||
      e.name === "JetStreamNotEnabled" ||
      /jetstream is not enabled/i.test(e.message) ||
      (e instanceof JetStreamApiError && e.code === JS_CLUSTER_NOT_AVAILABLE) ||
      /jetstream system temporarily unavailable/i.test(e.message),
  );
}

/**
 * Whether an error is the bus's trouble rather than an answer about what was asked: the transient
 * failures above, a request the bus did not answer in time (a reload, a lost connection), or a
 * connection that closed or dropped under the request. A caller retries it, for as long as it
 * takes; it never says the thing it was doing failed.
 */
export function isBusTrouble(error: unknown): boolean {
  return (
    isUnansweredRead(error) ||
    causeChain(error).some((e) => /connection (closed|draining)|disconnect/i.test(e.message))
  );
}

/**
 * Whether a read that makes a consumer (a bucket's keys, its history, a watch read up to what
 * stands) may be made again after `error`: a transient failure, or no answer in time. An R1
 * consumer — every such read makes one — is placed on a peer of the stream drawn at random
 * (nats-server 2.9.10, `createGroupForConsumer`, which does not look at whether the peer can be
 * reached), and only that peer answers its create: with one server of three cut off, a third of
 * the creates go unanswered for as long as it is away, while everything else answers. Another
 * try makes another consumer, most likely on a peer that answers; the server removes an
 * unanswered one once it has been idle. A read changes nothing, so making it again is harmless.
 */
export function isUnansweredRead(error: unknown): boolean {
  return (
    isTransient(error) ||
    causeChain(error).some(
      (e) => (e instanceof MeshError && e.code === ErrorCode.TIMEOUT) || e instanceof TimeoutError,
    )
  );
}

/**
 * Retries of a transient failure: 8, with the kit's backoff from 50 ms doubling to 2.5 s (jitter
 * included, so the processes a reload interrupted do not all come back at once): 6.5–8 s in all
 * before giving up. A reload on a loaded machine, or a cluster electing a stream leader (4–8 s,
 * docs/nats.md §5), can take longer than the 2.4 s this once was.
 */
const TRANSIENT_RETRIES = 8;
const TRANSIENT_BACKOFF = { initialMs: 50, maxMs: 2_500 } as const;
/**
 * Retries of a read (`isUnansweredRead`): 16, about 28 s of waiting in all besides the attempts —
 * a cluster electing its meta leader after the leader was cut off answered "unavailable" for
 * 8–10 s on a loaded machine, longer than a write's retries wait; a read changes nothing.
 */
export const READ_RETRIES = 16;

/**
 * Runs `fn`, turning whatever it throws into a MeshError with `context`. A transient failure
 * (see `isTransient`) is retried a few times first (`retries`, 8 by default), since `fn` is a
 * JetStream operation that did not reach JetStream and so did nothing. A caller that retries the
 * whole of what it does by itself passes 0, so its own backoff paces the attempts. A read passes
 * `isUnansweredRead` as `retriable`: it is made again also when it was not answered in time.
 */
export async function withContext<T>(
  context: ErrorContext,
  fn: () => Promise<T>,
  retries?: number,
  retriable: (error: unknown) => boolean = isTransient,
): Promise<T> {
  try {
    return await retry(fn, {
      policy: TRANSIENT_BACKOFF,
      isRetriable: retriable,
      maxAttempts: (retries ?? TRANSIENT_RETRIES) + 1,
    });
  } catch (error) {
    throw toMeshError(error, context);
  }
}

/**
 * Runs a read made of several requests (a watch read up to what stands), making it again as
 * `withContext` makes a transient failure again, also when it was not answered in time
 * (`isUnansweredRead`) or when `also` says so (a watch that ended before what stands was read).
 */
export function readAgainUnanswered<T>(
  fn: () => Promise<T>,
  options: { readonly signal?: AbortSignal; readonly also?: (error: unknown) => boolean } = {},
): Promise<T> {
  return retry(fn, {
    policy: TRANSIENT_BACKOFF,
    isRetriable: (error) => isUnansweredRead(error) || (options.also?.(error) ?? false),
    maxAttempts: READ_RETRIES + 1,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

/** Throws ABORTED when the signal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined, doing: string): void {
  if (signal?.aborted === true) {
    throw new MeshError(ErrorCode.ABORTED, `${doing}: aborted by the caller`, {
      cause: signal.reason,
    });
  }
}

/** Races `promise` against the signal; the promise's own work is not cancelled, only awaited no more. */
export async function abortable<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  doing: string,
): Promise<T> {
  if (signal === undefined) return promise;
  throwIfAborted(signal, doing);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () =>
      reject(
        new MeshError(ErrorCode.ABORTED, `${doing}: aborted by the caller`, {
          cause: signal.reason,
        }),
      );
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
  }
}
