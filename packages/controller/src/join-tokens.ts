/**
 * One-time join tokens: `<id>.<secret>`. The controller keeps only the SHA-256 of the secret (the
 * secret is 32 random bytes, so a fast hash suffices) with its expiry and, once used, when and by
 * which node; in a file of its own (0600: a snapshot and a journal, record-file.ts). The bus knows the token too, as the join
 * user `join.<id>` whose password is the secret (its bcrypt hash, kept by the broker): a joining
 * node has no other way onto the bus. See docs/decisions/0041-join-tokens.md.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { join } from "node:path";
import { z } from "zod";
import { ErrorCode, MeshError, parseJoinToken } from "@mesh/protocol";
import { RecordFile, versionOneFile, type RecordFileOptions } from "./record-file.js";
import { sha256Hex } from "./seal-cache.js";

const TokenRecord = z
  .object({
    id: z.string(),
    hash: z.string(),
    expiresAt: z.string(),
    usedAt: z.string().optional(),
    node: z.string().optional(),
  })
  .strict();
type TokenRecord = z.infer<typeof TokenRecord>;

export const JOIN_TOKENS_FILE = "join-tokens.json";
export const DEFAULT_JOIN_TOKEN_TTL_MS = 60 * 60 * 1000;
export const MAX_JOIN_TOKEN_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** The tokens' file: a snapshot (`{version, tokens}`, by id) and a journal of changes since. */
function tokensFile(path: string): RecordFileOptions<TokenRecord> {
  return versionOneFile({
    path,
    list: "tokens",
    record: TokenRecord,
    keyOf: (t) => t.id,
    refusal: () =>
      `${path} is not a join-token file this controller wrote; move it away (every unused token then stops working)`,
  });
}

export class JoinTokens {
  readonly #file: RecordFile<TokenRecord>;
  readonly #tokens = new Map<string, TokenRecord>();
  /**
   * What a pass asks of the tokens follows the joins since the last pass, not every token kept
   * (a week past expiry): used ids not yet handed out by {@link takeSpent}, and unused ids, whose
   * expiry it checks. Scanning every token each pass was most of a pass's time at 1,000 nodes.
   */
  readonly #spent = new Set<string>();
  readonly #unused = new Set<string>();
  /** When the first kept token may be forgotten (epoch ms): {@link prune} does nothing before. */
  #pruneAt = Number.POSITIVE_INFINITY;

  private constructor(file: RecordFile<TokenRecord>) {
    this.#file = file;
  }

  static async open(dir: string): Promise<JoinTokens> {
    const file = await RecordFile.open(tokensFile(join(dir, JOIN_TOKENS_FILE)));
    const store = new JoinTokens(file);
    // Each used token's join user is taken away once per start (gone already: nothing to do).
    for (const t of file.records()) store.#keep(t);
    return store;
  }

  /** A new token; returns it whole (shown once) with its id and expiry. */
  async create(options: { readonly ttlMs: number; readonly now: Date }): Promise<{
    token: string;
    id: string;
    secret: string;
    expiresAt: string;
  }> {
    // A digit first: the id is then never a node or module name (see parseJoinToken).
    const id = `${randomBytes(1)[0]! % 10}${randomBytes(6).toString("hex").slice(0, 11)}`;
    const secret = randomBytes(32).toString("base64url");
    const expiresAt = new Date(options.now.getTime() + options.ttlMs).toISOString();
    await this.#set({ id, hash: sha256Hex(secret), expiresAt });
    return { token: `${id}.${secret}`, id, secret, expiresAt };
  }

  /**
   * Makes `secret` the secret of the unused token `id` (accounts mode: the join user's seed and
   * JWT) and returns the whole token.
   */
  async replaceSecret(id: string, secret: string): Promise<string> {
    const record = this.#tokens.get(id);
    if (record === undefined || record.usedAt !== undefined) {
      throw new MeshError(ErrorCode.NOT_FOUND, `there is no unused join token ${id}`, { key: id });
    }
    await this.#set({ ...record, hash: sha256Hex(secret) });
    return `${id}.${secret}`;
  }

  /**
   * Takes the token for `node`: REFUSED when it is unknown, malformed, expired or used. A taken
   * token is marked used (and kept) before anything is issued, so it cannot work twice.
   */
  async take(token: string, node: string, now: Date): Promise<{ id: string }> {
    const parts = parseJoinToken(token);
    const record = parts === undefined ? undefined : this.#tokens.get(parts.id);
    const given = parts === undefined ? "" : sha256Hex(parts.secret);
    if (
      parts === undefined ||
      record === undefined ||
      !timingSafeEqual(Buffer.from(given), Buffer.from(record.hash))
    ) {
      throw refused(
        "the join token is not one this mesh made; ask the operator for a new one (mesh join-token)",
        node,
      );
    }
    if (record.usedAt !== undefined) {
      throw refused(
        `the join token ${parts.id} was used at ${record.usedAt} by ${record.node ?? "a node"}; a token works once — ask the operator for a new one (mesh join-token)`,
        node,
      );
    }
    if (Date.parse(record.expiresAt) <= now.getTime()) {
      throw refused(
        `the join token ${parts.id} expired at ${record.expiresAt}; ask the operator for a new one (mesh join-token)`,
        node,
      );
    }
    await this.#set({ ...record, usedAt: now.toISOString(), node });
    return { id: record.id };
  }

  /**
   * Ids whose join user should go — used, or expired unused — that no call has returned since
   * the store was opened; each is returned once.
   */
  takeSpent(now: Date): string[] {
    const out = [...this.#spent];
    this.#spent.clear();
    for (const id of this.#unused) {
      const t = this.#tokens.get(id);
      if (t !== undefined && Date.parse(t.expiresAt) > now.getTime()) continue;
      this.#unused.delete(id);
      out.push(id);
    }
    return out;
  }

  /** Forgets expired tokens (used ones are kept a while, so their refusal says "used"). */
  async prune(now: Date): Promise<void> {
    if (now.getTime() < this.#pruneAt) return;
    const gone: string[] = [];
    this.#pruneAt = Number.POSITIVE_INFINITY;
    for (const t of [...this.#tokens.values()]) {
      const forgetAt = Date.parse(t.expiresAt) + MAX_JOIN_TOKEN_TTL_MS;
      if (forgetAt <= now.getTime()) {
        this.#tokens.delete(t.id);
        this.#spent.delete(t.id);
        this.#unused.delete(t.id);
        gone.push(t.id);
      } else this.#pruneAt = Math.min(this.#pruneAt, forgetAt);
    }
    if (gone.length > 0) await this.#file.save([], gone);
  }

  /** Keeps `record` in memory and on disk (one journal line). */
  async #set(record: TokenRecord): Promise<void> {
    this.#keep(record);
    await this.#file.save([record]);
  }

  /** Keeps `record` in memory, noting whether its join user waits to go. */
  #keep(record: TokenRecord): void {
    const known = this.#tokens.has(record.id);
    this.#tokens.set(record.id, record);
    if (record.usedAt === undefined) this.#unused.add(record.id);
    else if (this.#unused.delete(record.id) || !known) this.#spent.add(record.id);
    this.#pruneAt = Math.min(this.#pruneAt, Date.parse(record.expiresAt) + MAX_JOIN_TOKEN_TTL_MS);
  }
}

function refused(message: string, node: string): MeshError {
  return new MeshError(ErrorCode.REFUSED, message, { node });
}
