/**
 * Request/reply on the bus: serving endpoints as NATS services (so `$SRV` discovery lists them)
 * and calling them. Replies carry errors as a code from one closed table (`ReplyCode`).
 *
 * Every handler accepts only requests whose subject is its own and whose reply subject is an
 * inbox. Whoever may create a JetStream consumer can have the server deliver a stored message
 * into any subject with an exact subscriber (docs/nats.md §1.4.3); such a delivery keeps the
 * stream's subject and has a `$JS.ACK` reply, so it is rejected here and the handler never runs.
 */
import { headers as natsHeaders, type Msg } from "@nats-io/nats-core";
import { Svcm, type Service, type ServiceMsg } from "@nats-io/services";
import {
  ErrorCode,
  MeshError,
  ReplyCode,
  ReplyHeader,
  Subject,
  replyCodeOf,
  toReplyCode,
} from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, jsonOf, toMeshError } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

/** A request as a handler sees it. */
export interface Request {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: ReadonlyMap<string, string>;
  /** The body as JSON; INVALID_INPUT when it is not JSON. */
  json(): unknown;
}

export interface EndpointSpec {
  readonly name: string;
  /**
   * A concrete subject, or one whose tokens may be `*` (one token each, never `>`): a request's
   * subject must match it token for token; the handler reads the wildcard tokens from it.
   */
  readonly subject: string;
  readonly metadata?: Record<string, string>;
  /** Returns the reply's JSON body; throws a MeshError whose code is in ReplyCode to refuse. */
  readonly handler: (request: Request) => Promise<unknown>;
}

export interface ServeOptions {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  readonly metadata?: Record<string, string>;
  readonly queue?: string;
  readonly endpoints: readonly EndpointSpec[];
  /** Told about every request rejected before its handler (a JetStream delivery, a forged subject). */
  readonly onRejected?: (why: string, subject: string) => void;
  /** Told about every INTERNAL error, with its detail, which the caller never sees. */
  readonly onInternalError?: (error: unknown, subject: string) => void;
}

/** A running service; `stop()` ends it, and stopping twice is harmless. */
export interface Served extends AsyncDisposable {
  readonly id: string;
  stop(): Promise<void>;
}

const STATUS_OF: Record<ReplyCode, number> = {
  [ReplyCode.INVALID_INPUT]: 400,
  [ReplyCode.REFUSED]: 403,
  [ReplyCode.NOT_FOUND]: 404,
  [ReplyCode.TIMEOUT]: 504,
  [ReplyCode.INTERNAL]: 500,
};

/** Why a message is not a genuine request to `subject`, or undefined when it is one. */
export function notAGenuineRequest(
  msg: Pick<Msg, "subject" | "reply">,
  subject: string,
): string | undefined {
  if (!subjectMatches(msg.subject, subject)) {
    return `it arrived on ${JSON.stringify(msg.subject)}, not the endpoint's own subject (a JetStream delivery or a forged subject)`;
  }
  if (msg.reply === undefined || msg.reply === "") return "it has no reply subject";
  if (!msg.reply.startsWith(`${Subject.inboxRoot}.`)) {
    return `its reply subject ${JSON.stringify(msg.reply)} is not an inbox (a JetStream delivery acks to $JS.ACK)`;
  }
  return undefined;
}

/** Whether `subject` is `pattern`, with each `*` token of the pattern standing for one token. */
function subjectMatches(subject: string, pattern: string): boolean {
  if (!pattern.includes("*")) return subject === pattern;
  const got = subject.split(".");
  const want = pattern.split(".");
  return (
    got.length === want.length &&
    want.every((token, i) => token === got[i] || (token === "*" && (got[i] ?? "") !== ""))
  );
}

/** Serves endpoints as one NATS service. */
export async function serve(bus: MeshBus, options: ServeOptions): Promise<Served> {
  const service: Service = await new Svcm(natsOf(bus).nc).add({
    name: options.name,
    version: options.version,
    ...(options.description === undefined ? {} : { description: options.description }),
    ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
    ...(options.queue === undefined ? {} : { queue: options.queue }),
  });
  for (const endpoint of options.endpoints) {
    service.addEndpoint(endpoint.name, {
      subject: endpoint.subject,
      ...(endpoint.metadata === undefined ? {} : { metadata: endpoint.metadata }),
      handler: (error, msg) => {
        if (error !== null) {
          options.onInternalError?.(error, endpoint.subject);
          return;
        }
        void answer(msg, endpoint, options);
      },
    });
  }
  // The endpoints' subscriptions are sent, not yet known to the server: a round trip makes sure
  // they are, so a request made once this returns finds a responder (a loaded machine showed
  // "no responders" right after serve()).
  await natsOf(bus).nc.flush();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await service.stop();
  };
  return { id: service.info().id, stop, [Symbol.asyncDispose]: stop };
}

async function answer(
  msg: ServiceMsg,
  endpoint: EndpointSpec,
  options: ServeOptions,
): Promise<void> {
  const rejected = notAGenuineRequest(msg, endpoint.subject);
  if (rejected !== undefined) {
    options.onRejected?.(rejected, msg.subject);
    return;
  }
  const request: Request = {
    subject: msg.subject,
    data: msg.data,
    headers: headerMap(msg),
    json: () =>
      jsonOf(
        msg,
        ErrorCode.INVALID_INPUT,
        (why) => `the request body is not JSON (${why}); send a JSON document`,
      ),
  };
  try {
    const result = await endpoint.handler(request);
    msg.respond(JSON.stringify(result ?? null));
  } catch (error) {
    const code = replyCodeOf(error);
    if (code === ReplyCode.INTERNAL) options.onInternalError?.(error, endpoint.subject);
    // The description travels in a header, where the client refuses CR and LF: a refusal that
    // lists its problems on several lines is sent on one.
    const description =
      code === ReplyCode.INTERNAL
        ? "the handler failed; its detail is in the server's log"
        : (error as Error).message.replace(/[\r\n]+/g, " ");
    const h = natsHeaders();
    h.set(ReplyHeader.code, code);
    try {
      msg.respondError(STATUS_OF[code], description, undefined, { headers: h });
    } catch (failure) {
      // Never an unhandled rejection: that would end the serving process.
      options.onInternalError?.(failure, endpoint.subject);
    }
  }
}

function headerMap(msg: Msg): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  if (msg.headers !== undefined) {
    for (const [key, values] of msg.headers) out.set(key, values.join(","));
  }
  return out;
}

export interface RequestOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Headers to send beside the body (a tool call's `Mesh-Timeout-Ms`, say). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Sends a JSON request and returns the reply's JSON body. A coded error reply becomes a
 * MeshError with that code (unknown codes become INTERNAL).
 */
export async function request(
  bus: MeshBus,
  subject: string,
  body: unknown,
  options: RequestOptions = {},
): Promise<unknown> {
  const doing = `asking ${subject}`;
  let reply: Msg;
  let sent: ReturnType<typeof natsHeaders> | undefined;
  if (options.headers !== undefined) {
    sent = natsHeaders();
    for (const [key, value] of Object.entries(options.headers)) sent.set(key, value);
  }
  try {
    reply = await abortable(
      natsOf(bus).nc.request(subject, JSON.stringify(body), {
        timeout: options.timeoutMs ?? 5_000,
        ...(sent === undefined ? {} : { headers: sent }),
      }),
      options.signal,
      doing,
    );
  } catch (error) {
    throw toMeshError(error, { doing, subject });
  }
  const code = reply.headers?.get(ReplyHeader.code);
  const serviceError = reply.headers?.get("Nats-Service-Error");
  if ((code !== undefined && code !== "") || (serviceError !== undefined && serviceError !== "")) {
    throw new MeshError(toReplyCode(code), serviceError ?? `${doing}: refused`, { subject });
  }
  try {
    return reply.json();
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${doing}: the reply is not JSON; the service is broken`,
      { subject, cause: error },
    );
  }
}
