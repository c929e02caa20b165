/**
 * The mesh's one error class and its permanent codes.
 *
 * A code never changes meaning once released: scripts and other processes match on it. Every
 * code is documented in `docs/errors.md` (what it means, what to do); a test fails when the two
 * drift apart.
 */

export const ErrorCode = {
  /** A node, module, state, tool or key name breaks the naming rule. */
  INVALID_NAME: "INVALID_NAME",
  /** A bucket key or subject does not have the shape its layout entry says. */
  INVALID_KEY: "INVALID_KEY",
  /** A value read from or written to the bus does not match its schema. */
  INVALID_VALUE: "INVALID_VALUE",
  /** A module's manifest breaks the schema or a rule across its fields; every problem is listed. */
  MANIFEST_INVALID: "MANIFEST_INVALID",
  /** A node's wanted modules cannot be composed together; every reason is listed, with its fix. */
  COMPOSITION_REFUSED: "COMPOSITION_REFUSED",
  /** A credential file is missing, unreadable, or not a credential. */
  CREDENTIAL_INVALID: "CREDENTIAL_INVALID",
  /** A credential file can be read by someone other than its owner. */
  CREDENTIAL_EXPOSED: "CREDENTIAL_EXPOSED",
  /** The bus could not be reached or refused the credential. */
  CONNECT_FAILED: "CONNECT_FAILED",
  /** The bus's TLS certificate does not match the fingerprint the credential pins. */
  TLS_PIN_MISMATCH: "TLS_PIN_MISMATCH",
  /** The bus refused an operation the credential is not granted. */
  PERMISSION_DENIED: "PERMISSION_DENIED",
  /** A bucket, stream, object or key that was asked for does not exist. */
  NOT_FOUND: "NOT_FOUND",
  /** A request's input does not match what the receiver accepts. */
  INVALID_INPUT: "INVALID_INPUT",
  /** The receiver understood the request and will not do it (a rule forbids it). */
  REFUSED: "REFUSED",
  /** A write lost a race with another writer (wrong last revision). */
  CONFLICT: "CONFLICT",
  /** An operation did not finish before its deadline. */
  TIMEOUT: "TIMEOUT",
  /** The caller aborted the operation through its AbortSignal. */
  ABORTED: "ABORTED",
  /** No nats-server binary was found where the mesh looks for one. */
  SERVER_NOT_FOUND: "SERVER_NOT_FOUND",
  /** The nats-server binary is older than the mesh supports or its version cannot be read. */
  SERVER_UNSUPPORTED: "SERVER_UNSUPPORTED",
  /** The embedded nats-server did not start or did not answer in time. */
  SERVER_START_FAILED: "SERVER_START_FAILED",
  /** The embedded nats-server did not take a new configuration. */
  SERVER_RELOAD_FAILED: "SERVER_RELOAD_FAILED",
  /** JetStream on the bus did not answer (a cluster without a majority of its servers up). */
  JETSTREAM_UNAVAILABLE: "JETSTREAM_UNAVAILABLE",
  /** The bus was asked to listen beyond loopback in plain TCP without `--insecure`. */
  BUS_UNPROTECTED: "BUS_UNPROTECTED",
  /** A mesh root was started with another bus shape (single server, cluster, foreign bus). */
  BUS_SHAPE_CHANGED: "BUS_SHAPE_CHANGED",
  /** The bus did not take the mesh account's new JWT (accounts mode: a revocation). */
  ACCOUNT_UPDATE_FAILED: "ACCOUNT_UPDATE_FAILED",
  /** A mesh root is already in use by another running `mesh up`. */
  ROOT_IN_USE: "ROOT_IN_USE",
  /** The view was asked to listen beyond loopback without the explicit option and a token. */
  VIEW_UNPROTECTED: "VIEW_UNPROTECTED",
  /** A server of the mesh (the view) could not listen on its address and port. */
  LISTEN_FAILED: "LISTEN_FAILED",
  /** An archive's bytes do not have the SHA-256 digest it was asked for by. */
  DIGEST_MISMATCH: "DIGEST_MISMATCH",
  /** An archive holds an entry a bundle may not hold, or is too big; nothing of it was unpacked. */
  ARCHIVE_REFUSED: "ARCHIVE_REFUSED",
  /** A module's source (a folder, a git ref, an archive) cannot be read or found. */
  SOURCE_UNAVAILABLE: "SOURCE_UNAVAILABLE",
  /** A build failed (a bad manifest, a compile error); its record holds the error and the log. */
  BUILD_FAILED: "BUILD_FAILED",
  /** The build module of a bundle's language does not answer: the build waits until it does. */
  BUILD_MODULE_UNAVAILABLE: "BUILD_MODULE_UNAVAILABLE",
  /** A bucket a process cannot work without cannot be opened with its credential's grant. */
  BUCKET_UNAVAILABLE: "BUCKET_UNAVAILABLE",
  /** A long-lived watch ended without being asked: its bucket or consumer is gone, or the server went silent. */
  WATCH_ENDED: "WATCH_ENDED",
  /**
   * An operation needed the bus and it did not answer (away, reloading, JetStream's API without a
   * responder); what runs keeps running and the operation is tried again once it answers.
   */
  BUS_UNAVAILABLE: "BUS_UNAVAILABLE",
  /** A module's process exited (or was killed) on a node; the host starts it again with backoff. */
  PROCESS_EXITED: "PROCESS_EXITED",
  /** The runtime could not load or serve a module's tools on a node (a throw, a crash, a hang). */
  TOOLS_FAILED: "TOOLS_FAILED",
  /**
   * A node's host is handing the node over to a new host build (decision 0200): the module
   * `mesh-host` is starting on it until the new host says it is healthy.
   */
  HOST_HANDOVER: "HOST_HANDOVER",
  /**
   * A host build did not take a node over (it did not boot, let go, or become healthy within its
   * deadline), or the host cannot hand over at all; the host that ran before runs on.
   */
  HOST_UPGRADE_FAILED: "HOST_UPGRADE_FAILED",
  /** A node's composition needs features its host does not have (decision 0202). */
  HOST_TOO_OLD: "HOST_TOO_OLD",
  /** A command line was given a missing or malformed argument. */
  USAGE: "USAGE",
  /** Something the mesh did not expect; the detail is in the log. */
  INTERNAL: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** What a caller may need to act on an error, beside its message. */
export interface MeshErrorFields {
  readonly node?: string;
  readonly module?: string;
  readonly key?: string;
  readonly subject?: string;
  readonly path?: string;
  readonly cause?: unknown;
}

/**
 * The one error the mesh throws on purpose. Its message says what failed, quotes the value,
 * says the state, and says what to do; `code` is for programs.
 */
export class MeshError extends Error {
  override readonly name = "MeshError";
  readonly code: ErrorCode;
  readonly node: string | undefined;
  readonly module: string | undefined;
  readonly key: string | undefined;
  readonly subject: string | undefined;
  readonly path: string | undefined;

  constructor(code: ErrorCode, message: string, fields: MeshErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = code;
    this.node = fields.node;
    this.module = fields.module;
    this.key = fields.key;
    this.subject = fields.subject;
    this.path = fields.path;
  }

  /** A plain object for `--json` output and logs: code, message and the fields that are set. */
  toJSON(): Record<string, string> {
    const out: Record<string, string> = { code: this.code, message: this.message };
    for (const field of ["node", "module", "key", "subject", "path"] as const) {
      const value = this[field];
      if (value !== undefined) out[field] = value;
    }
    return out;
  }
}

/** Whether `error` is a MeshError, optionally with the given code. */
export function isMeshError(error: unknown, code?: ErrorCode): error is MeshError {
  return error instanceof MeshError && (code === undefined || error.code === code);
}

/**
 * The closed table of codes a reply on the bus may carry (in the `Mesh-Error-Code` header).
 * Anything else a handler throws goes out as `INTERNAL`, and its detail stays in the log.
 */
export const ReplyCode = {
  INVALID_INPUT: "INVALID_INPUT",
  NOT_FOUND: "NOT_FOUND",
  TIMEOUT: "TIMEOUT",
  REFUSED: "REFUSED",
  INTERNAL: "INTERNAL",
} as const;
export type ReplyCode = (typeof ReplyCode)[keyof typeof ReplyCode];

/** Reads a code off the wire; anything outside the table becomes `INTERNAL`. */
export function toReplyCode(value: unknown): ReplyCode {
  return typeof value === "string" && Object.hasOwn(ReplyCode, value)
    ? (value as ReplyCode)
    : ReplyCode.INTERNAL;
}

/** The reply code a handler's failure goes out with: a MeshError's own when the table has it. */
export function replyCodeOf(error: unknown): ReplyCode {
  return error instanceof MeshError ? toReplyCode(error.code) : ReplyCode.INTERNAL;
}

/** The code of whatever was thrown: a MeshError's own, anything else `INTERNAL`. */
export function errorCodeOf(error: unknown): ErrorCode {
  return error instanceof MeshError ? error.code : ErrorCode.INTERNAL;
}

/** The header names a coded reply uses. */
export const ReplyHeader = {
  code: "Mesh-Error-Code",
} as const;
