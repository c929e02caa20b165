/**
 * The broker: every bus user the controller issues (a node's host, its runtime, each module
 * process that declares its `broker` credential, and one-time join users), with a random password
 * made once, its bcrypt hash made once and kept (never re-hashed: ~60 ms each), and permissions
 * from @mesh/core's grant functions. Its users are kept in a file (0600, atomic writes) so a
 * restarted controller keeps issuing the same passwords, and nodes keep their credentials.
 *
 * A change is staged (`ensure`, `revoke`) and applied by `commit`: the full users list (the static
 * users of `mesh up` plus the issued ones) goes to the bus through a UsersSink, which rewrites the
 * server's config and reloads it (nothing restarts; unaffected connections stay up), and then
 * `mesh-grants.<node>.<module>` is written for each changed user (never a password) and deleted
 * for each revoked one.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { z } from "zod";
import {
  ErrorCode,
  MeshError,
  Permissions,
  nodeModuleKey,
  type Credential,
  type Grant,
  type Permissions as PermissionsType,
} from "@mesh/protocol";
import { hashPassword, type KvBucket, type ServerUser, type UsersSink } from "@mesh/bus";
import { readJsonFile, writeJsonFile } from "./files.js";
import type { Vault } from "./vault.js";

export const PrincipalKind = {
  host: "host",
  runtime: "runtime",
  module: "module",
  join: "join",
} as const;
export type PrincipalKind = (typeof PrincipalKind)[keyof typeof PrincipalKind];

const IssuedUser = z
  .object({
    user: z.string().min(1),
    node: z.string().min(1),
    module: z.string().min(1),
    kind: z.enum(["host", "runtime", "module", "join"]),
    passwordHash: z.string().min(1),
    /** The password, sealed with the vault's key (context: the user name). */
    password: z.object({ nonce: z.string(), ciphertext: z.string(), tag: z.string() }).strict(),
    permissions: Permissions,
    /** Join users only: when the token stops working. */
    expiresAt: z.string().optional(),
  })
  .strict();
export type IssuedUser = z.infer<typeof IssuedUser>;

const UsersFile = z.object({ version: z.literal(1), users: z.array(IssuedUser) }).strict();

/** A principal as the controller wants it now. */
export interface DesiredPrincipal {
  readonly user: string;
  readonly node: string;
  readonly module: string;
  readonly kind: PrincipalKind;
  readonly permissions: PermissionsType;
  readonly expiresAt?: string;
}

export interface BrokerOptions {
  /** The controller's folder; the users are kept in `<dir>/broker-users.json`. */
  readonly dir: string;
  readonly vault: Vault;
  readonly sink: UsersSink;
  /** Users the broker does not issue but must keep in the list (mesh up's principals). */
  readonly staticUsers: () => Promise<readonly ServerUser[]>;
  /** Where issued credentials point: the bus urls, and the certificate to pin. */
  readonly servers: readonly string[];
  readonly fingerprint?: string;
  readonly ca?: string;
  /**
   * The one login of a bus the mesh does not own: every credential is issued as it (under the
   * principal's node and module, so its inbox is the principal's), and no users list is written.
   */
  readonly shared?: { readonly user: string; readonly password: string };
  /** Where grants are written; absent: not written (tests of the broker alone). */
  readonly grants?: KvBucket<Grant>;
  readonly now?: () => Date;
}

export const BROKER_USERS_FILE = "broker-users.json";

/** `<node>.<module>`: the bus user of a node's principal. */
export const principalUser = (node: string, module: string): string => nodeModuleKey(node, module);

export class Broker {
  readonly #options: BrokerOptions;
  readonly #path: string;
  readonly #users = new Map<string, IssuedUser>();
  readonly #changed = new Set<string>();
  readonly #revoked = new Set<string>();
  #dirty = false;
  /** How many passwords were hashed; a test checks nothing is hashed twice. */
  hashesMade = 0;

  private constructor(options: BrokerOptions) {
    this.#options = options;
    this.#path = join(options.dir, BROKER_USERS_FILE);
  }

  static async open(options: BrokerOptions): Promise<Broker> {
    const broker = new Broker(options);
    for (const u of await readIssuedUsers(broker.#path)) broker.#users.set(u.user, u);
    return broker;
  }

  get(user: string): IssuedUser | undefined {
    return this.#users.get(user);
  }

  /** Every issued user of `node` (join users belong to no node). */
  usersOf(node: string): IssuedUser[] {
    return [...this.#users.values()].filter((u) => u.node === node && u.kind !== "join");
  }

  all(): IssuedUser[] {
    return [...this.#users.values()];
  }

  /**
   * Issues `p` when it has no user yet (a new random password, hashed once), or updates its
   * permissions when they moved. Returns whether anything changed.
   */
  async ensure(p: DesiredPrincipal, password?: string): Promise<boolean> {
    const kept = this.#users.get(p.user);
    if (
      kept !== undefined &&
      kept.kind === p.kind &&
      kept.node === p.node &&
      kept.module === p.module
    ) {
      if (JSON.stringify(kept.permissions) === JSON.stringify(p.permissions)) return false;
      this.#users.set(p.user, { ...kept, permissions: p.permissions });
      this.#touch(p.user);
      return true;
    }
    const plain = password ?? randomBytes(32).toString("base64url");
    const passwordHash = await hashPassword(plain);
    this.hashesMade += 1;
    this.#users.set(p.user, {
      user: p.user,
      node: p.node,
      module: p.module,
      kind: p.kind,
      passwordHash,
      password: this.#options.vault.seal(plain, p.user),
      permissions: p.permissions,
      ...(p.expiresAt === undefined ? {} : { expiresAt: p.expiresAt }),
    });
    this.#touch(p.user);
    return true;
  }

  /** Takes the user away (its live connections are closed by the reload). */
  revoke(user: string): boolean {
    const kept = this.#users.get(user);
    if (kept === undefined) return false;
    this.#users.delete(user);
    this.#changed.delete(user);
    if (kept.kind !== "join") this.#revoked.add(user);
    this.#dirty = true;
    return true;
  }

  #touch(user: string): void {
    this.#revoked.delete(user);
    if (this.#users.get(user)?.kind !== "join") this.#changed.add(user);
    this.#dirty = true;
  }

  /** The credential file's content for an issued user. */
  credential(user: string): Credential {
    const u = this.#users.get(user);
    if (u === undefined) {
      throw new MeshError(
        ErrorCode.NOT_FOUND,
        `no bus user ${JSON.stringify(user)} is issued; it is made when the node's composition needs it`,
        { key: user },
      );
    }
    const { fingerprint, ca, servers, shared } = this.#options;
    return {
      servers: [...servers],
      user: shared?.user ?? u.user,
      password: shared?.password ?? this.#options.vault.open(u.password, u.user).toString("utf8"),
      node: u.node,
      module: u.module,
      ...(fingerprint === undefined ? {} : { fingerprint }),
      ...(ca === undefined ? {} : { ca }),
    };
  }

  /** The full users list for the bus: the static users, then the issued ones by name. */
  async serverUsers(): Promise<ServerUser[]> {
    return withIssued(await this.#options.staticUsers(), [...this.#users.values()]);
  }

  /**
   * Makes the next commit reload even with nothing staged: at start, the bus may run a list
   * without the issued users (`mesh up` starts it with its own principals only).
   */
  requireReload(): void {
    this.#dirty = true;
  }

  /** Whether something is staged that `commit` would apply. */
  get pending(): boolean {
    return this.#dirty;
  }

  /**
   * Applies what is staged: keeps the file, reloads the bus with the full list, then writes and
   * deletes grants. Nothing staged: nothing is done (no reload).
   */
  async commit(options: { readonly signal?: AbortSignal } = {}): Promise<boolean> {
    if (!this.#dirty) return false;
    const changed = [...this.#changed];
    const revoked = [...this.#revoked];
    this.#dirty = false;
    this.#changed.clear();
    this.#revoked.clear();
    try {
      await writeJsonFile(this.#path, {
        version: 1,
        users: [...this.#users.values()].sort((a, b) => (a.user < b.user ? -1 : 1)),
      });
      if (this.#options.shared === undefined) {
        await this.#options.sink.setUsers(
          await this.serverUsers(),
          options.signal === undefined ? {} : { signal: options.signal },
        );
      }
    } catch (error) {
      // Staged again, so the next commit retries it.
      this.#dirty = true;
      for (const u of changed) if (this.#users.has(u)) this.#changed.add(u);
      for (const u of revoked) this.#revoked.add(u);
      throw error;
    }
    const grants = this.#options.grants;
    if (grants !== undefined) {
      const at = (this.#options.now?.() ?? new Date()).toISOString();
      const call = options.signal === undefined ? {} : { signal: options.signal };
      for (const user of changed) {
        const u = this.#users.get(user);
        if (u === undefined) continue;
        await grants.put(
          user,
          { user, node: u.node, module: u.module, permissions: u.permissions, at },
          call,
        );
      }
      for (const user of revoked) await grants.delete(user, call);
    }
    return true;
  }
}

/** The users a broker issued, as kept in its file; none when there is no file yet. */
async function readIssuedUsers(path: string): Promise<IssuedUser[]> {
  const raw = await readJsonFile(path);
  if (raw === undefined) return [];
  const parsed = UsersFile.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${path} is not a users file this controller wrote (${parsed.error.issues[0]?.message ?? "bad shape"}); restore it from a backup, or move it away to issue every credential again`,
      { path },
    );
  }
  return parsed.data.users;
}

/**
 * The users a bus started on `controllerDir`'s mesh must know from its first second: `statics`
 * (mesh up's principals) and every user the broker issued and kept. Starting the bus with the
 * statics alone would refuse every host, runtime and module until the controller reloads
 * (issue 15: a refused login in that window left processes disconnected for good).
 */
export async function serverUsersOnDisk(
  controllerDir: string,
  statics: readonly ServerUser[],
): Promise<ServerUser[]> {
  return withIssued(statics, await readIssuedUsers(join(controllerDir, BROKER_USERS_FILE)));
}

/** The static users, then the issued ones by name (a static user of the same name wins). */
function withIssued(statics: readonly ServerUser[], issued: readonly IssuedUser[]): ServerUser[] {
  const names = new Set(statics.map((u) => u.user));
  const rest = issued
    .filter((u) => !names.has(u.user))
    .sort((a, b) => (a.user < b.user ? -1 : 1))
    .map((u) => ({ user: u.user, passwordHash: u.passwordHash, permissions: u.permissions }));
  return [...statics, ...rest];
}

/** Reads mesh up's users list (`<root>/users.json`): the static users the broker keeps. */
export async function readStaticUsers(path: string): Promise<ServerUser[]> {
  const raw = await readJsonFile(path);
  const parsed = z
    .object({
      users: z.array(
        z.object({ user: z.string(), passwordHash: z.string(), permissions: Permissions }),
      ),
    })
    .safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${path} is not the users list mesh up writes (${raw === undefined ? "there is no file" : (parsed.error.issues[0]?.message ?? "bad shape")}); start the controller with the --root of a mesh that is up`,
      { path },
    );
  }
  return parsed.data.users.map((u) => ({
    user: u.user,
    passwordHash: u.passwordHash,
    permissions: u.permissions,
  }));
}
