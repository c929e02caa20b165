/**
 * The embedded nats-server's configuration file, rendered from options by a pure function, and
 * the bcrypt hashing of the passwords it lists.
 *
 * What the server does with this text was checked against nats-server 2.9.10 (see
 * docs/nats.md §1.4.1 and §2, and the tests beside this file):
 * - An empty allow list allows everything, so a side with nothing allowed is written as
 *   `deny: [">"]`, never as `allow: []`.
 * - An unquoted value starting with `$` is a variable reference (`password: $2b$10$…` fails
 *   with "variable reference … can not be found"); inside double quotes `$` is literal. So every
 *   string is written double-quoted, with `\\`, `\"` and control characters escaped (the parser
 *   knows only `\t \n \r \" \\ \xXX`; `\u` is a parse error).
 * - Unknown keys are fatal, so a key is written only for a server version that knows it.
 */
import bcrypt from "bcryptjs";
import { ErrorCode, MeshError, type Permissions } from "@mesh/protocol";
import type { ServerAccounts } from "./accounts.js";
import { supportsSyncInterval } from "./find-server.js";

/** One entry of the server's users list. */
export interface ServerUser {
  readonly user: string;
  /** A bcrypt hash (`$2a$`, `$2b$` or `$2y$`); never the password itself. */
  readonly passwordHash: string;
  readonly permissions: Permissions;
}

export interface ServerTls {
  readonly certFile: string;
  readonly keyFile: string;
  /**
   * The authority routes are verified against (a cluster's servers verify each other's
   * certificates); a self-signed certificate is its own.
   */
  readonly caFile?: string;
}

/**
 * The `cluster {}` block of a server in a cluster: its route listener and every route (its own
 * included: the server skips itself). Kept in the options file, so a reload of the users list
 * writes it again — a config without it is one the running server refuses to reload into.
 */
export interface ServerCluster {
  /** The cluster's name: the same on every server. */
  readonly name: string;
  /** The route listener's address; the client listener's host by default. */
  readonly host?: string;
  /** The route port. */
  readonly port: number;
  /** `nats-route://host:port` of every server of the cluster. */
  readonly routes: readonly string[];
  /** Routes over TLS (with the same certificate as clients). */
  readonly tls?: ServerTls;
}

export interface ServerConfigOptions {
  /** The server's version (`2.9.10`): decides which keys it may be given. */
  readonly serverVersion: string;
  /** The name in the server's log and INFO; must stay the same across reloads. */
  readonly serverName: string;
  /** The client listener's address; 127.0.0.1 by default, so a dev mesh is not on the network. */
  readonly host?: string;
  /** The client port; 0 lets the server pick one (it logs which). */
  readonly port: number;
  /** JetStream's store_dir (the server keeps its data in `<storeDir>/jetstream`). */
  readonly storeDir: string;
  readonly maxMemoryStore?: number;
  readonly maxFileStore?: number;
  readonly tls?: ServerTls;
  /** A server in a cluster: routes to the others. Clustered JetStream needs a unique name. */
  readonly cluster?: ServerCluster;
  /**
   * The HTTP monitoring port (`/routez`, `/varz`) on the client listener's host; off when absent.
   * The test harness uses it to wait until a cluster's routes are formed.
   */
  readonly monitorPort?: number;
  /**
   * Users-list mode: never empty (a server with no users lets anyone in with every
   * permission). Exactly one of `users` and `accounts` is given.
   */
  readonly users?: readonly ServerUser[];
  /** Accounts mode (decision 0080): the operator, its accounts and the resolver's folder. */
  readonly accounts?: ServerAccountsConfig;
}

/** The server's side of accounts mode: what it trusts, and where its full resolver keeps JWTs. */
export interface ServerAccountsConfig extends ServerAccounts {
  readonly resolverDir: string;
}

/** How often a cluster's resolvers sync: the longest a server back from an outage is behind. */
export const RESOLVER_SYNC_INTERVAL = "5s";

/**
 * The server pings a connection it has neither heard from nor sent anything to for this long, and
 * closes it after {@link SERVER_PING_MAX} pings unanswered: an idle client beyond a partition
 * goes ~8–10 s after it fell silent (decision 0182). With the default, 2 minutes and 2, the
 * server's first ping went unanswered into the partition and every call routed to the dead
 * connection queued behind its retransmissions — lost for up to 2 minutes after the heal. A
 * connection the server keeps sending to (a host's watches, a route's JetStream traffic) is
 * never pinged: only TCP gives up on it. The mesh's clients ping every 2 s themselves, so the
 * server never needs to ping a live one.
 */
export const SERVER_PING_INTERVAL = "2s";
export const SERVER_PING_MAX = 3;

/** The longest protocol line (a CONNECT with its user JWT) the server takes in accounts mode. */
export const MAX_CONTROL_LINE = 128 * 1024;

/** How a bus lets users in: a users list the mesh reloads, or JWTs of the mesh's operator. */
export const AuthMode = { users: "users", accounts: "accounts" } as const;
export type AuthMode = (typeof AuthMode)[keyof typeof AuthMode];

export const DEFAULT_HOST = "127.0.0.1";

/**
 * JetStream limits. The server's own defaults (75% of memory, up to 1 TB of disk) suit a
 * dedicated machine, not a server embedded in a developer's `mesh up`. The file limit must still
 * hold every stream's `max_bytes` reservation (the layout's streams reserve about 336 MiB).
 */
export const DEFAULT_MAX_MEMORY_STORE = 256 * 1024 * 1024;
export const DEFAULT_MAX_FILE_STORE = 10 * 1024 * 1024 * 1024;

/** Everything, as the controller (and the test harness's admin) holds it. */
export const FULL_PERMISSIONS: Permissions = {
  publish: { allow: [">"] },
  subscribe: { allow: [">"] },
  allowResponses: true,
};

/**
 * bcrypt cost for bus passwords. One hash with bcryptjs on Node 20 took ~60 ms at cost 10 and
 * ~110 ms at 11 (measured on the dev container); the server pays a comparable price on every
 * client connect. Passwords are random (not guessable), so the cost only has to make a stolen
 * config file's hashes expensive to brute-force, and 10 does. Hash a password once, when it is
 * minted, and keep the hash: re-hashing a thousand users on every rewrite would take a minute.
 */
export const BCRYPT_COST = 10;

/** bcrypt reads only the first 72 bytes of a password; longer ones are refused, not cut. */
const BCRYPT_MAX_BYTES = 72;

const BCRYPT_HASH = /^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/;

/**
 * A bcrypt hash of `plain` for the users list. bcryptjs writes the `$2b$` prefix; nats-server
 * 2.9.10 accepts it (verified: a client connects with the password whose hash this made).
 */
export async function hashPassword(
  plain: string,
  options: { readonly cost?: number; readonly signal?: AbortSignal } = {},
): Promise<string> {
  options.signal?.throwIfAborted();
  if (plain.length === 0) {
    throw new MeshError(ErrorCode.INVALID_VALUE, "a bus password must not be empty");
  }
  if (Buffer.byteLength(plain, "utf8") > BCRYPT_MAX_BYTES) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `a bus password is at most ${BCRYPT_MAX_BYTES} bytes (bcrypt ignores the rest); use a shorter one`,
    );
  }
  return bcrypt.hash(plain, options.cost ?? BCRYPT_COST);
}

/** Whether `plain` is the password `hash` was made from. */
export function verifyPassword(plain: string, hash: string): Promise<boolean> {
  return bcrypt.compare(plain, hash);
}

/**
 * The configuration file for `options`. Pure: the same options give the same text. Throws
 * INVALID_VALUE for what would make the server run open or misread the file; the grammar of
 * subjects is left to the server, whose refusal comes back as the reload's or start's error.
 */
export function renderServerConfig(options: ServerConfigOptions): string {
  checkOptions(options);
  const lines: string[] = [
    "# Written by mesh; rewritten whenever the users list changes. Edits by hand are lost.",
    `server_name: ${quoteConfigString(options.serverName)}`,
    `host: ${quoteConfigString(options.host ?? DEFAULT_HOST)}`,
    // -1 is the server's "pick a free port"; it logs the port it took.
    `port: ${options.port === 0 ? -1 : options.port}`,
    ...(options.monitorPort === undefined
      ? []
      : [`http: ${quoteConfigString(`${options.host ?? DEFAULT_HOST}:${options.monitorPort}`)}`]),
    // How soon the server gives up on a client that went silent (decision 0182).
    `ping_interval: ${quoteConfigString(SERVER_PING_INTERVAL)}`,
    `ping_max: ${SERVER_PING_MAX}`,
    "",
    "jetstream {",
    `  store_dir: ${quoteConfigString(options.storeDir)}`,
    `  max_memory_store: ${options.maxMemoryStore ?? DEFAULT_MAX_MEMORY_STORE}`,
    `  max_file_store: ${options.maxFileStore ?? DEFAULT_MAX_FILE_STORE}`,
  ];
  if (supportsSyncInterval(options.serverVersion)) {
    // A single server has no replica to recover from: an acknowledged write must be on disk.
    lines.push(`  sync_interval: ${quoteConfigString("always")}`);
  }
  lines.push("}", "");
  if (options.tls !== undefined) {
    lines.push(
      "tls {",
      `  cert_file: ${quoteConfigString(options.tls.certFile)}`,
      `  key_file: ${quoteConfigString(options.tls.keyFile)}`,
      "  timeout: 2",
      "}",
      "",
    );
  }
  if (options.cluster !== undefined) lines.push(...renderCluster(options.cluster, options));
  if (options.accounts !== undefined) {
    lines.push(...renderAccounts(options.accounts));
    return lines.join("\n");
  }
  lines.push("authorization {", "  users = [");
  for (const user of options.users ?? []) lines.push(...renderUser(user));
  lines.push("  ]", "}", "");
  return lines.join("\n");
}

function renderCluster(cluster: ServerCluster, options: ServerConfigOptions): string[] {
  const lines = [
    "cluster {",
    `  name: ${quoteConfigString(cluster.name)}`,
    `  host: ${quoteConfigString(cluster.host ?? options.host ?? DEFAULT_HOST)}`,
    `  port: ${cluster.port}`,
    `  routes: ${renderList(cluster.routes)}`,
  ];
  if (cluster.tls !== undefined) {
    lines.push(
      "  tls {",
      `    cert_file: ${quoteConfigString(cluster.tls.certFile)}`,
      `    key_file: ${quoteConfigString(cluster.tls.keyFile)}`,
      ...(cluster.tls.caFile === undefined
        ? []
        : [`    ca_file: ${quoteConfigString(cluster.tls.caFile)}`]),
      "    timeout: 2",
      "  }",
    );
  }
  lines.push("}", "");
  return lines;
}

/**
 * Accounts mode: the operator JWT, the system account, a full resolver (it keeps the account
 * JWTs pushed to it in its folder, so an update outlives a restart) and the accounts it starts
 * with, stored when newer than what its folder holds. Checked against nats-server 2.9.10.
 */
function renderAccounts(accounts: ServerAccountsConfig): string[] {
  const lines = [
    // A client's CONNECT line carries its user JWT, and a JWT carries the user's permissions:
    // the operator's are ~6 KB, past the server's default 4 KB line (the login then times out).
    `max_control_line: ${MAX_CONTROL_LINE}`,
    `operator: ${quoteConfigString(accounts.operatorJwt)}`,
    `system_account: ${quoteConfigString(accounts.systemAccount)}`,
    "resolver {",
    "  type: full",
    `  dir: ${quoteConfigString(accounts.resolverDir)}`,
    "  allow_delete: false",
    // How often the servers compare what their resolvers hold (a hash each; they send JWTs only
    // when theirs differ). An update reaches only the servers routed to when it is pushed: one
    // that was down or cut off learns it at its next sync, and until then still lets a revoked
    // user in. The window is this interval (decision 0181).
    `  interval: ${quoteConfigString(RESOLVER_SYNC_INTERVAL)}`,
    "}",
    "resolver_preload {",
  ];
  for (const [key, jwt] of Object.entries(accounts.preload)) {
    lines.push(`  ${key}: ${quoteConfigString(jwt)}`);
  }
  lines.push("}", "");
  return lines;
}

function renderUser(user: ServerUser): string[] {
  const { permissions } = user;
  const lines = [
    "    {",
    `      user: ${quoteConfigString(user.user)}`,
    `      password: ${quoteConfigString(user.passwordHash)}`,
    "      permissions: {",
    `        publish: ${renderSide(permissions.publish)}`,
    `        subscribe: ${renderSide(permissions.subscribe)}`,
  ];
  const responses = permissions.allowResponses;
  if (responses === true) lines.push("        allow_responses: true");
  if (typeof responses === "object") {
    const expires =
      responses.expiresMs === undefined
        ? ""
        : `, expires: ${quoteConfigString(`${responses.expiresMs}ms`)}`;
    lines.push(`        allow_responses: { max: ${responses.max}${expires} }`);
  }
  lines.push("      }", "    }");
  return lines;
}

/**
 * One side (publish or subscribe). Nothing allowed is `deny: [">"]`: the server reads an empty
 * or missing allow list as "allow everything" (docs/nats.md §1.4.1).
 */
function renderSide(side: Permissions["publish"]): string {
  const allow = side.allow ?? [];
  const deny = side.deny ?? [];
  if (allow.length === 0) return `{ deny: ${renderList([">"])} }`;
  const parts = [`allow: ${renderList(allow)}`];
  if (deny.length > 0) parts.push(`deny: ${renderList(deny)}`);
  return `{ ${parts.join(", ")} }`;
}

function renderList(subjects: readonly string[]): string {
  return `[${subjects.map(quoteConfigString).join(", ")}]`;
}

/**
 * A double-quoted string the server reads back byte for byte. `$` needs no escape inside
 * double quotes (the server substitutes variables only in unquoted values); non-ASCII text is
 * written as is (the file is UTF-8).
 */
export function quoteConfigString(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (char === "\\") out += "\\\\";
    else if (char === '"') out += '\\"';
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (char === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += char;
  }
  return `${out}"`;
}

function checkOptions(options: ServerConfigOptions): void {
  const { port } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw invalid(`the client port must be a whole number from 0 to 65535, got ${String(port)}`);
  }
  if (options.serverName.length === 0 || /\s/.test(options.serverName)) {
    throw invalid(
      `the server name ${JSON.stringify(options.serverName)} must be non-empty and without spaces`,
    );
  }
  if (options.storeDir.length === 0) throw invalid("the JetStream store folder must be named");
  if (options.cluster !== undefined) checkCluster(options.cluster);
  if (options.accounts !== undefined) {
    if (options.users !== undefined) {
      throw invalid("a bus takes a users list or the mesh's accounts, not both; give one of them");
    }
    for (const key of [options.accounts.systemAccount, ...Object.keys(options.accounts.preload)]) {
      if (!/^A[A-Z2-7]{55}$/.test(key)) {
        throw invalid(
          `${JSON.stringify(key)} is not an account public key (A and 55 base32 letters)`,
        );
      }
    }
    return;
  }
  if (options.users === undefined || options.users.length === 0) {
    throw invalid(
      "the users list is empty, which would turn the server's authorization off (anyone could " +
        "connect with every permission); give at least the controller's user",
    );
  }
  const seen = new Set<string>();
  for (const user of options.users) {
    if (user.user.length === 0 || hasControl(user.user)) {
      throw invalid(
        `the bus user name ${JSON.stringify(user.user)} is empty or has control characters`,
      );
    }
    if (seen.has(user.user)) {
      throw invalid(
        `the bus user ${JSON.stringify(user.user)} is listed twice; list each user once`,
      );
    }
    seen.add(user.user);
    if (!BCRYPT_HASH.test(user.passwordHash)) {
      throw invalid(
        `the password of bus user ${JSON.stringify(user.user)} is not a bcrypt hash; ` +
          "pass hashPassword(password), never the password itself",
      );
    }
    for (const side of ["publish", "subscribe"] as const) {
      for (const kind of ["allow", "deny"] as const) {
        for (const subject of user.permissions[side][kind] ?? []) {
          // A space is allowed: in a subscribe entry, "subject queue" names a queue group.
          if (subject.trim().length === 0 || hasControl(subject)) {
            throw invalid(
              `bus user ${JSON.stringify(user.user)} has the ${side} ${kind} subject ` +
                `${JSON.stringify(subject)}, which is blank or has control characters`,
            );
          }
        }
      }
    }
  }
}

function checkCluster(cluster: ServerCluster): void {
  if (!Number.isInteger(cluster.port) || cluster.port < 1 || cluster.port > 65535) {
    throw invalid(
      `the route port must be a whole number from 1 to 65535, got ${String(cluster.port)}`,
    );
  }
  if (cluster.name.length === 0 || /\s/.test(cluster.name)) {
    throw invalid(
      `the cluster name ${JSON.stringify(cluster.name)} must be non-empty and without spaces`,
    );
  }
  for (const route of cluster.routes) {
    if (!/^nats-route:\/\/[^\s/]+:\d+$/.test(route)) {
      throw invalid(
        `the route ${JSON.stringify(route)} is not nats-route://host:port; list every server's route address`,
      );
    }
  }
}

function hasControl(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f]/.test(value);
}

function invalid(message: string): MeshError {
  return new MeshError(ErrorCode.INVALID_VALUE, message);
}
