/**
 * Sealing is random (an ephemeral key and a nonce each time), so sealing the same credential
 * twice gives two different strings, a different composition and a needless restart on the node.
 * The controller therefore seals once per (node, need id, content digest, node key) and reuses
 * the sealed value while the three are unchanged; an unchanged composition stays byte-identical.
 *
 * The cache is kept per node in a file of its own (`<dir>/<node>.json`, 0600), so a restarted
 * controller reuses what it sealed before, and one node's change writes one small file whatever
 * the size of the fleet. See docs/decisions/0040-stable-sealed-values.md.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { rm } from "node:fs/promises";
import { z } from "zod";
import { seal } from "@mesh/bus";
import { readJsonFile, writeJsonFile } from "./files.js";

const Entry = z.object({ digest: z.string(), key: z.string(), sealed: z.string() }).strict();
const NodeFile = z.object({ needs: z.record(z.string(), Entry) }).strict();
type Entry = z.infer<typeof Entry>;

export const sha256Hex = (text: string | Uint8Array): string =>
  createHash("sha256").update(text).digest("hex");

export class SealCache {
  readonly #dir: string | undefined;
  readonly #nodes = new Map<string, Map<string, Entry>>();
  readonly #dirty = new Set<string>();
  /** How many seals were made (not reused); for tests and the bench. */
  sealsMade = 0;

  /** `dir` undefined: kept in memory only (tests, the bench, `mesh compose`). */
  constructor(options: { readonly dir?: string } = {}) {
    this.#dir = options.dir;
  }

  async #load(node: string): Promise<Map<string, Entry>> {
    let needs = this.#nodes.get(node);
    if (needs !== undefined) return needs;
    needs = new Map();
    if (this.#dir !== undefined) {
      const parsed = NodeFile.safeParse(await readJsonFile(join(this.#dir, `${node}.json`)));
      // A damaged file costs one reseal, never a failure.
      if (parsed.success) for (const [id, e] of Object.entries(parsed.data.needs)) needs.set(id, e);
    }
    this.#nodes.set(node, needs);
    return needs;
  }

  /** `plaintext` sealed to `publicKey` for the need `needId` on `node`, reused when unchanged. */
  async sealFor(input: {
    readonly node: string;
    readonly needId: string;
    readonly publicKey: string;
    readonly plaintext: string;
  }): Promise<string> {
    const needs = await this.#load(input.node);
    const digest = sha256Hex(input.plaintext);
    const key = sha256Hex(input.publicKey);
    const kept = needs.get(input.needId);
    if (kept !== undefined && kept.digest === digest && kept.key === key) return kept.sealed;
    const sealed = seal(input.publicKey, input.plaintext, input.needId);
    this.sealsMade += 1;
    needs.set(input.needId, { digest, key, sealed });
    this.#dirty.add(input.node);
    return sealed;
  }

  /** Forgets the needs of `node` not in `keep` (a need that went away is not resealed later). */
  retain(node: string, keep: ReadonlySet<string>): void {
    const needs = this.#nodes.get(node);
    if (needs === undefined) return;
    for (const id of [...needs.keys()]) {
      if (!keep.has(id)) {
        needs.delete(id);
        this.#dirty.add(node);
      }
    }
  }

  /** Writes the files of the nodes that changed since the last flush. */
  async flush(): Promise<void> {
    if (this.#dir === undefined) {
      this.#dirty.clear();
      return;
    }
    for (const node of [...this.#dirty]) {
      this.#dirty.delete(node);
      const needs = this.#nodes.get(node) ?? new Map<string, Entry>();
      const path = join(this.#dir, `${node}.json`);
      if (needs.size === 0) await rm(path, { force: true });
      else await writeJsonFile(path, { needs: Object.fromEntries([...needs].sort()) });
    }
  }
}
