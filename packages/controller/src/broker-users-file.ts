/**
 * The broker's users on disk, `<controller dir>/broker-users.json`: a snapshot and a journal of
 * the users set or taken away since (record-file.ts), so a commit writes what it changed, not
 * every user. Also what `mesh up` reads to start a users-list bus with every issued user.
 */
import { join } from "node:path";
import { z } from "zod";
import { ErrorCode, MeshError, Permissions } from "@mesh/protocol";
import type { ServerUser } from "@mesh/bus/server";
import { readJsonFile } from "./files.js";
import { readRecords, versionOneFile, type RecordFileOptions } from "./record-file.js";
import { DueIndex } from "./due-index.js";

const Sealed = z.object({ nonce: z.string(), ciphertext: z.string(), tag: z.string() }).strict();

/**
 * Accounts mode: a key this user held before its grant moved, revoked whole at `due` (epoch ms).
 * `before`: only in files of controllers that re-signed the same key — its JWTs up to that
 * second are revoked, not the key.
 */
const Superseded = z
  .object({
    key: z.string().min(1),
    due: z.number().int(),
    before: z.number().int().optional(),
    /** When the key's last JWT expires (unix s): its revocation is pruned after; absent, never. */
    expires: z.number().int().optional(),
  })
  .strict();
export type Superseded = z.infer<typeof Superseded>;

const IssuedUserFields = z
  .object({
    user: z.string().min(1),
    node: z.string().min(1),
    module: z.string().min(1),
    kind: z.enum(["host", "runtime", "module", "join", "mcp", "view", "renewal"]),
    /** Users-list mode: the password's bcrypt hash, and the password sealed (context: the user). */
    passwordHash: z.string().min(1).optional(),
    password: Sealed.optional(),
    /** Accounts mode: the user's public nkey, its seed sealed, and its JWT. */
    publicKey: z.string().min(1).optional(),
    seed: Sealed.optional(),
    jwt: z.string().min(1).optional(),
    /** When the JWT was signed (unix s); written by controllers that re-signed the same key. */
    issuedAt: z.number().int().optional(),
    permissions: Permissions,
    /**
     * When the JWT stops working: a join user's with its token; a host's, runtime's or module's
     * a lifetime after it was signed, signed again before (credential-lifetime.ts).
     */
    expiresAt: z.string().optional(),
    /**
     * Accounts mode: the keys this user held before, each revoked once its grace is over; kept
     * here so a controller restart in the grace revokes them all the same. A file of a controller
     * that re-signed the same key holds `{before, due}`: this user's own key, up to `before`.
     */
    supersedes: z
      .union([
        z.array(Superseded),
        z.object({ before: z.number().int(), due: z.number().int() }).strict(),
      ])
      .optional(),
  })
  .strict();

export type IssuedUser = Omit<z.output<typeof IssuedUserFields>, "supersedes"> & {
  readonly supersedes?: readonly Superseded[];
};

export const IssuedUser = IssuedUserFields.transform(({ supersedes, ...u }): IssuedUser => {
  if (supersedes === undefined) return u;
  const list = Array.isArray(supersedes)
    ? supersedes
    : [{ key: u.publicKey ?? "", due: supersedes.due, before: supersedes.before }];
  return { ...u, supersedes: list.filter((s) => s.key !== "") };
});

/**
 * The issued users by name, with each node's users indexed: a pass asks for one node's users
 * per node it composes, and scanning every user for it grew with the fleet (three or more
 * users a node). Likewise when each is due (`dueOf`: its renewal), which every pass asks.
 * Every set and delete keeps the indexes.
 */
export class IssuedUsers extends Map<string, IssuedUser> {
  readonly #byNode = new Map<string, Set<string>>();
  readonly #due = new DueIndex();
  readonly #dueOf: (u: IssuedUser) => number | undefined;

  constructor(dueOf: (u: IssuedUser) => number | undefined = () => undefined) {
    super();
    this.#dueOf = dueOf;
  }

  override set(user: string, u: IssuedUser): this {
    const before = this.get(user);
    if (before !== undefined && before.node !== u.node) this.#unindex(before);
    super.set(user, u);
    this.#due.set(user, this.#dueOf(u));
    let users = this.#byNode.get(u.node);
    if (users === undefined) {
      users = new Set();
      this.#byNode.set(u.node, users);
    }
    users.add(user);
    return this;
  }

  override delete(user: string): boolean {
    const before = this.get(user);
    if (before !== undefined) this.#unindex(before);
    this.#due.delete(user);
    return super.delete(user);
  }

  override clear(): void {
    this.#byNode.clear();
    this.#due.clear();
    super.clear();
  }

  /** When the first user is due (epoch ms), if one ever is. */
  nextDue(): number | undefined {
    return this.#due.next();
  }

  /** The users due at or before `now`, earliest first. */
  dueBy(now: number): IssuedUser[] {
    return this.#due.dueBy(now).flatMap((user) => this.get(user) ?? []);
  }

  /** Every user of `node`. */
  ofNode(node: string): IssuedUser[] {
    return [...(this.#byNode.get(node) ?? [])].flatMap((user) => this.get(user) ?? []);
  }

  #unindex(u: IssuedUser): void {
    const users = this.#byNode.get(u.node);
    users?.delete(u.user);
    if (users?.size === 0) this.#byNode.delete(u.node);
  }
}

export const BROKER_USERS_FILE = "broker-users.json";

/** The broker's users file: a snapshot (`{version, users}`, by name) and its journal. */
export function usersFile(path: string): RecordFileOptions<IssuedUser> {
  return versionOneFile({
    path,
    list: "users",
    record: IssuedUser,
    keyOf: (u) => u.user,
    refusal: (issue) =>
      `${path} is not a users file this controller wrote (${issue}); restore it from a backup, or move it away to issue every credential again`,
  });
}

/** The users a broker issued, as kept in its file; none when there is no file yet. */
async function readIssuedUsers(path: string): Promise<IssuedUser[]> {
  return [...(await readRecords(usersFile(path))).records.values()];
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
export function withIssued(
  statics: readonly ServerUser[],
  issued: readonly IssuedUser[],
): ServerUser[] {
  const names = new Set(statics.map((u) => u.user));
  const rest = issued
    .filter((u): u is IssuedUser & { passwordHash: string } => u.passwordHash !== undefined)
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
