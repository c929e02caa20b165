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
 *
 * In accounts mode (decision 0080) a user is an nkey (its seed sealed with the vault's key) and
 * a JWT the mesh account's signing key signs: issuing one changes nothing on the server, and
 * `commit` only keeps the file and, when users were taken away or their permissions moved, pushes
 * one account update with their revocations. Nothing is reloaded. Permissions that move give the
 * user a new key (decision 0091); the old one is revoked whole once its grace is over.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ErrorCode, MeshError, type Credential, type Grant } from "@mesh/protocol";
import { type KvBucket } from "@mesh/bus";
import {
  hashPassword,
  type AccountAuthority,
  type ServerUser,
  type UsersSink,
} from "@mesh/bus/server";
import { credentialOf, renewUser, signUser } from "./signed-users.js";
import { expiryFor, expirySeconds, isRenewed, renewAt } from "./credential-lifetime.js";
import {
  BROKER_USERS_FILE,
  IssuedUsers,
  usersFile,
  withIssued,
  type IssuedUser,
  type Superseded,
} from "./broker-users-file.js";
import { type DesiredPrincipal, type SharedLogin } from "./principals.js";
import { RecordFile } from "./record-file.js";
import {
  Urgency,
  mergeRevocation,
  revocationEntries,
  supersededRevocation,
  type RevocationPusher,
  type StagedRevocation,
} from "./revocation-pusher.js";
import type { Vault } from "./vault.js";

export {
  PrincipalKind,
  hostPrincipal,
  principalUser,
  renewalPrincipal,
  sharedLoginOf,
  type DesiredPrincipal,
  type SharedLogin,
} from "./principals.js";
export {
  BROKER_USERS_FILE,
  readStaticUsers,
  serverUsersOnDisk,
  type IssuedUser,
} from "./broker-users-file.js";

export interface BrokerOptions {
  /** The controller's folder; the users are kept in `<dir>/broker-users.json`. */
  readonly dir: string;
  readonly vault: Vault;
  /** Users-list mode: where the full list goes. */
  readonly sink?: UsersSink;
  /** Users-list mode: users the broker does not issue but keeps in the list (mesh up's). */
  readonly staticUsers?: () => Promise<readonly ServerUser[]>;
  /** Accounts mode: signs users and revokes them with account updates (no sink, no list). */
  readonly accounts?: AccountAuthority;
  /** Where issued credentials point: the bus urls, and the certificate to pin. */
  readonly servers: readonly string[];
  readonly fingerprint?: string;
  readonly ca?: string;
  /**
   * The one login of a bus the mesh does not own: every credential is issued as it (under the
   * principal's node and module, so its inbox is the principal's), and no users list is written.
   */
  readonly shared?: SharedLogin;
  /** Where grants are written; absent: not written (tests of the broker alone). */
  readonly grants?: KvBucket<Grant>;
  readonly now?: () => Date;
  /**
   * Accounts mode: how long a JWT whose permissions moved stays good beside its successor
   * ({@link SUPERSEDED_GRACE_MS} by default).
   */
  readonly supersededGraceMs?: number;
  /**
   * Accounts mode: how long a host's, runtime's or module's JWT lives; it is signed again with a
   * third of it left (credential-lifetime.ts). Absent: those JWTs never expire.
   */
  readonly credentialLifetimeMs?: number;
  /**
   * Accounts mode: pushes the revocations beside the commit instead of in it (the controller's):
   * a commit then only keeps the file and the grants; new users need no update. Without it, a
   * commit awaits the update and fails with ACCOUNT_UPDATE_FAILED when the bus does not take it.
   */
  readonly pusher?: RevocationPusher;
}

/**
 * How long a superseded key stays good: a process that holds it (the runtime, handing over to
 * one started with the new key) serves until its successor serves (the host waits up to 30 s for
 * that), then drains its calls before it stops, for up to the longest call deadline (300 s) and
 * 10 s more; 20 s more for the host to apply the composition. Revoking it at once closed the old
 * runtime's connection in the middle of the handover, and its tools had no responder until the
 * new one served them. A user taken away (`revoke`) is revoked at once.
 */
export const SUPERSEDED_GRACE_MS = 360_000;

/** Whether the kept user `kept` is still the one `p` describes: the same kind, node and module. */
function sameHolder(kept: IssuedUser, p: DesiredPrincipal): boolean {
  return kept.kind === p.kind && kept.node === p.node && kept.module === p.module;
}

export class Broker {
  readonly #options: BrokerOptions;
  readonly #file: RecordFile<IssuedUser>;
  readonly #users: IssuedUsers;
  /** Users set or taken away since the file last kept them. */
  readonly #unsaved = new Set<string>();
  readonly #changed = new Set<string>();
  readonly #revoked = new Set<string>();
  /** Accounts mode: user keys whose JWTs up to a second go in the next account update. */
  readonly #revocations = new Map<string, StagedRevocation>();
  /** Accounts mode: spent join users' keys, which the pusher gathers (revocation-pusher.ts). */
  readonly #joinRevocations = new Map<string, StagedRevocation>();
  /** Accounts mode: superseded keys, revoked once `due` (epoch ms) has come; by key. */
  readonly #superseded = new Map<string, Superseded & { readonly user: string }>();
  #dirty = false;
  /** What the last commit did to the bus, for the controller's log (", bus reloaded", …). */
  commitNote = "";
  /** How many passwords were hashed; a test checks nothing is hashed twice. */
  hashesMade = 0;

  private constructor(options: BrokerOptions, file: RecordFile<IssuedUser>) {
    if (
      options.accounts === undefined &&
      options.shared === undefined &&
      (options.sink === undefined || !options.staticUsers)
    ) {
      throw new MeshError(
        ErrorCode.INTERNAL,
        "a broker issues into a users list (sink and static users) or the mesh's accounts; it was given neither",
      );
    }
    this.#options = options;
    this.#file = file;
    const lifetime = options.credentialLifetimeMs;
    this.#users = new IssuedUsers((u) =>
      lifetime === undefined ? undefined : renewAt(u, lifetime),
    );
  }

  static async open(options: BrokerOptions): Promise<Broker> {
    const file = await RecordFile.open(usersFile(join(options.dir, BROKER_USERS_FILE)));
    const broker = new Broker(options, file);
    for (const u of file.records()) {
      broker.#users.set(u.user, u);
      for (const s of u.supersedes ?? []) broker.#superseded.set(s.key, { ...s, user: u.user });
    }
    return broker;
  }

  get(user: string): IssuedUser | undefined {
    return this.#users.get(user);
  }

  /** Every issued user of `node` (join users belong to no node). */
  usersOf(node: string): IssuedUser[] {
    return this.#users.ofNode(node).filter((u) => u.kind !== "join");
  }

  all(): IssuedUser[] {
    return [...this.#users.values()];
  }

  /**
   * Issues `p` when it has no user yet (a new random password, hashed once), or updates its
   * permissions when they moved. Returns whether anything changed.
   */
  async ensure(p: DesiredPrincipal, password?: string): Promise<boolean> {
    if (this.#options.accounts !== undefined) return this.#ensureSigned(p, this.#options.accounts);
    const kept = this.#users.get(p.user);
    if (kept !== undefined && sameHolder(kept, p) && kept.passwordHash !== undefined) {
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

  /**
   * Accounts mode: a new user, or one whose permissions moved, gets a new nkey and a JWT. A key
   * it held before stays good for its grace (a process holding it hands over and drains), and
   * is then revoked whole by a commit.
   */
  async #ensureSigned(p: DesiredPrincipal, accounts: AccountAuthority): Promise<boolean> {
    const kept = this.#users.get(p.user);
    const lifetime = this.#options.credentialLifetimeMs;
    const expires = lifetime !== undefined && isRenewed(p.kind);
    if (
      kept !== undefined &&
      sameHolder(kept, p) &&
      kept.jwt !== undefined &&
      JSON.stringify(kept.permissions) === JSON.stringify(p.permissions) &&
      // A key whose JWT never expires gets a new key once lifetimes are on: its revocation is
      // then kept for good once, and every later one can be pruned.
      (!expires || kept.expiresAt !== undefined)
    )
      return false;
    const expiresAt = expires ? expiryFor(p.kind, this.#now(), lifetime) : p.expiresAt;
    const signed = await signUser(accounts, this.#options.vault, {
      ...p,
      ...(expiresAt === undefined ? {} : { expiresAt }),
    });
    const supersedes = (kept?.supersedes ?? []).filter((s) => s.key !== kept?.publicKey);
    if (kept?.publicKey !== undefined) {
      const grace = this.#options.supersededGraceMs ?? SUPERSEDED_GRACE_MS;
      const lapses = expirySeconds(kept);
      const s: Superseded = {
        key: kept.publicKey,
        due: this.#now().getTime() + grace,
        ...(lapses === undefined ? {} : { expires: lapses }),
      };
      this.#superseded.set(s.key, { ...s, user: p.user });
      supersedes.push(s);
    }
    // Kept with the new user, so the revocations survive a restart of the controller.
    this.#users.set(p.user, supersedes.length === 0 ? signed : { ...signed, supersedes });
    this.#touch(p.user);
    return true;
  }

  /**
   * Takes the user away (its live connections are closed by the reload or account update),
   * with every key it held before whose grace is not over.
   */
  revoke(user: string): boolean {
    const kept = this.#users.get(user);
    if (kept === undefined) return false;
    const at = Math.floor(this.#now().getTime() / 1000);
    if (kept.publicKey !== undefined) {
      // A JWT with an expiry (a join user's, a renewed one's): pruned once past the last.
      const expiresAt = expirySeconds(kept);
      this.#stageRevocation(
        kept.publicKey,
        { at, ...(expiresAt === undefined ? {} : { expiresAt }) },
        kept.kind === "join" ? Urgency.gathered : Urgency.urgent,
      );
    }
    for (const s of kept.supersedes ?? []) {
      this.#stageRevocation(s.key, supersededRevocation(s, at));
      this.#superseded.delete(s.key);
    }
    this.#users.delete(user);
    this.#unsaved.add(user);
    this.#changed.delete(user);
    if (kept.kind !== "join") this.#revoked.add(user);
    this.#dirty = true;
    return true;
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  #touch(user: string): void {
    this.#unsaved.add(user);
    this.#revoked.delete(user);
    if (this.#users.get(user)?.kind !== "join") this.#changed.add(user);
    this.#dirty = true;
  }

  /** The credential file's content for an issued user. */
  credential(user: string): Credential {
    return credentialOf(this.#users.get(user), user, this.#options);
  }

  /** The full users list for the bus: the static users, then the issued ones by name. */
  async serverUsers(): Promise<ServerUser[]> {
    return withIssued((await this.#options.staticUsers?.()) ?? [], [...this.#users.values()]);
  }

  /**
   * Accounts mode: a join user's secret, the part of its token after the id: its nkey seed and
   * JWT, base64url, so a joining node can log in with the token alone.
   */
  joinSecret(user: string): string {
    const credential = this.credential(user);
    if (credential.jwt === undefined || credential.seed === undefined) {
      throw new MeshError(ErrorCode.INTERNAL, `${user} is not a signed user`);
    }
    return Buffer.from(`${credential.seed}\n${credential.jwt}`, "utf8").toString("base64url");
  }

  /** Accounts mode with a credential lifetime: JWTs expire and are renewed (decision 0150). */
  get renews(): boolean {
    return this.signed && this.#options.credentialLifetimeMs !== undefined;
  }

  /** Accounts mode is on: users are signed, nothing is reloaded. */
  get signed(): boolean {
    return this.#options.accounts !== undefined;
  }

  /**
   * Makes the next commit reload even with nothing staged: at start, the bus may run a list
   * without the issued users (`mesh up` starts it with its own principals only).
   */
  requireReload(): void {
    if (this.#options.accounts === undefined) this.#dirty = true;
  }

  /** Whether something is staged that `commit` would apply. */
  get pending(): boolean {
    return this.#dirty || this.#dueSuperseded().length > 0;
  }

  /**
   * When the next superseded JWT is due to be revoked, or the next JWT to be renewed (epoch
   * ms), if one waits.
   */
  nextDueAt(): number | undefined {
    let next = this.#users.nextDue();
    for (const { due } of this.#superseded.values()) next = Math.min(next ?? due, due);
    return next;
  }

  /**
   * Accounts mode: signs again, with the same key and grant and a new expiry, every JWT whose
   * renewal is due; returns the nodes whose credentials were renewed (to be composed again, so
   * their holders get them). Nothing is revoked: the old JWT lapses by itself.
   */
  async renewDue(): Promise<string[]> {
    const lifetime = this.#options.credentialLifetimeMs;
    const accounts = this.#options.accounts;
    if (lifetime === undefined || accounts === undefined) return [];
    const now = this.#now();
    const nodes = new Set<string>();
    for (const u of this.#users.dueBy(now.getTime())) {
      this.#users.set(u.user, await renewUser(accounts, u, expiryFor(u.kind, now, lifetime)));
      this.#unsaved.add(u.user);
      this.#dirty = true;
      nodes.add(u.node);
    }
    return [...nodes].sort();
  }

  /** The revocation of the superseded `key` is staged: its user no longer carries it. */
  #settleSuperseded(key: string): void {
    const s = this.#superseded.get(key);
    this.#superseded.delete(key);
    const u = s === undefined ? undefined : this.#users.get(s.user);
    if (u?.supersedes === undefined) return;
    const { supersedes, ...rest } = u;
    const left = supersedes.filter((o) => o.key !== key);
    this.#users.set(u.user, left.length === 0 ? rest : { ...rest, supersedes: left });
    this.#unsaved.add(u.user);
  }

  #dueSuperseded(): string[] {
    const now = this.#now().getTime();
    return [...this.#superseded].filter(([, s]) => s.due <= now).map(([key]) => key);
  }

  /** Stages `r` for `key`: the later second, and an expiry only while every one has one. */
  #stageRevocation(key: string, r: StagedRevocation, urgency: Urgency = Urgency.urgent): void {
    const staged = urgency === Urgency.urgent ? this.#revocations : this.#joinRevocations;
    staged.set(key, mergeRevocation(staged.get(key), r));
  }

  /**
   * Accounts mode: hands the revocations (kept in the account's list already) to the pusher,
   * which gathers the join users', or pushes them all and waits.
   */
  async #pushRevocations(
    accounts: AccountAuthority,
    staged: {
      readonly urgent: ReadonlyMap<string, StagedRevocation>;
      readonly joins: ReadonlyMap<string, StagedRevocation>;
    },
    call: { readonly signal?: AbortSignal },
  ): Promise<void> {
    const pusher = this.#options.pusher;
    if (pusher !== undefined) {
      pusher.add(staged.urgent, Urgency.urgent);
      pusher.add(staged.joins, Urgency.gathered);
      this.commitNote = staged.urgent.size === 0 ? "" : `, ${staged.urgent.size} to revoke`;
      return;
    }
    const all = new Map(staged.joins);
    for (const [key, r] of staged.urgent) all.set(key, mergeRevocation(all.get(key), r));
    const [revocations, expiry] = revocationEntries(all);
    const started = performance.now();
    await accounts.revoke(revocations, { ...call, ...expiry });
    const ms = Math.round(performance.now() - started);
    this.commitNote = all.size === 0 ? "" : `, ${all.size} revoked (account update ${ms} ms)`;
  }

  /**
   * Applies what is staged: keeps the file, reloads the bus with the full list, then writes and
   * deletes grants. Nothing staged: nothing is done (no reload).
   */
  async commit(options: { readonly signal?: AbortSignal } = {}): Promise<boolean> {
    const nowS = Math.floor(this.#now().getTime() / 1000);
    for (const key of this.#dueSuperseded()) {
      // The whole key: no JWT of it is signed again (`before`: a file that re-signed the key).
      const s = this.#superseded.get(key);
      this.#stageRevocation(key, s === undefined ? { at: nowS } : supersededRevocation(s, nowS));
      this.#settleSuperseded(key);
      this.#dirty = true;
    }
    if (!this.#dirty) return false;
    const changed = [...this.#changed];
    const revoked = [...this.#revoked];
    const revocations = new Map(this.#revocations);
    const joinRevocations = new Map(this.#joinRevocations);
    const unsaved = [...this.#unsaved];
    this.#unsaved.clear();
    this.#dirty = false;
    this.#changed.clear();
    this.#revoked.clear();
    this.#revocations.clear();
    this.#joinRevocations.clear();
    const call = options.signal === undefined ? {} : { signal: options.signal };
    try {
      // The revocations are kept in the account's list before the users file forgets the users
      // they end: a controller stopped before the update still leaves nothing to revoke unsaid.
      if (this.#options.accounts !== undefined && revocations.size + joinRevocations.size > 0) {
        const all = new Map([...joinRevocations, ...revocations]);
        await this.#options.accounts.record(...revocationEntries(all));
      }
      await this.#file.save(
        unsaved.flatMap((u) => this.#users.get(u) ?? []),
        unsaved.filter((u) => !this.#users.has(u)),
      );
      if (this.#options.accounts !== undefined) {
        await this.#pushRevocations(
          this.#options.accounts,
          { urgent: revocations, joins: joinRevocations },
          call,
        );
      } else if (this.#options.shared === undefined) {
        await this.#options.sink?.setUsers(await this.serverUsers(), call);
        this.commitNote = ", bus reloaded";
      }
    } catch (error) {
      // Staged again, so the next commit retries it.
      this.#dirty = true;
      for (const u of unsaved) this.#unsaved.add(u);
      for (const u of changed) if (this.#users.has(u)) this.#changed.add(u);
      for (const u of revoked) this.#revoked.add(u);
      for (const [key, r] of revocations) this.#stageRevocation(key, r);
      for (const [key, r] of joinRevocations) this.#stageRevocation(key, r, Urgency.gathered);
      throw error;
    }
    const grants = this.#options.grants;
    if (grants !== undefined) {
      const at = this.#now().toISOString();
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
