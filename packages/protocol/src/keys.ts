/**
 * The key of every bucket, one function to build it and one to read it back: a key built here
 * always parses, and a key of another shape is INVALID_KEY.
 */
import { ErrorCode, MeshError } from "./errors.js";
import { ALL_NODES, checkName, isName, type NameKind } from "./names.js";

/** `<node>.<module>`: have, wants, differences, grants. */
export function nodeModuleKey(node: string, module: string): string {
  return `${checkName("node", node)}.${checkName("module", module)}`;
}

export function parseNodeModuleKey(key: string): { node: string; module: string } {
  const cell = cellOfKey(key);
  if (cell !== undefined) return cell;
  throw invalidKey(key, "<node>.<module>");
}

/** The node and module of a `<node>.<module>` key; undefined for `all.<module>` and any other shape. */
export function cellOfKey(key: string): { node: string; module: string } | undefined {
  const [node, module, extra] = key.split(".");
  return extra === undefined && isName("node", node) && isName("module", module)
    ? { node, module }
    : undefined;
}

/** A target of an assignment or a put: one node, or every node. */
export type Target = { readonly node: string } | { readonly all: true };

/** `<node>.<module>` or `all.<module>`: assignments, puts and retries. */
export function targetModuleKey(target: Target, module: string): string {
  const first = "all" in target ? ALL_NODES : checkName("node", target.node);
  return `${first}.${checkName("module", module)}`;
}

export function parseTargetModuleKey(key: string): { target: Target; module: string } {
  const [first, module, extra] = key.split(".");
  if (extra === undefined && isName("module", module)) {
    if (first === ALL_NODES) return { target: { all: true }, module };
    if (isName("node", first)) return { target: { node: first }, module };
  }
  throw invalidKey(key, "<node>.<module> or all.<module>");
}

/** `<module>.<seq>`: candidates. */
export function candidateKey(module: string, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 1) {
    throw new MeshError(
      ErrorCode.INVALID_KEY,
      `a candidate's seq must be a whole number from 1, got ${String(seq)}; the indexer counts from 1 per module`,
      { module },
    );
  }
  return `${checkName("module", module)}.${seq}`;
}

export function parseCandidateKey(key: string): { module: string; seq: number } {
  const [module, seq, extra] = key.split(".");
  // A seq beyond 2^53 would not read back as the number that was written; candidateKey refuses it.
  if (
    extra === undefined &&
    isName("module", module) &&
    seq !== undefined &&
    /^[1-9][0-9]*$/.test(seq)
  ) {
    if (Number.isSafeInteger(Number(seq))) return { module, seq: Number(seq) };
  }
  throw invalidKey(key, "<module>.<seq>");
}

/** `<module>.<build>`: builds. */
export function buildKey(module: string, build: string): string {
  return `${checkName("module", module)}.${checkName("build", build)}`;
}

export function parseBuildKey(key: string): { module: string; build: string } {
  const [module, build] = parsePair(key, "build", "<module>.<build>");
  return { module, build };
}

/** `<module>.<key>` (mesh-wide) or `<module>.<key>.<node>` (one node): config. */
export function configKey(module: string, key: string, node?: string): string {
  const base = `${checkName("module", module)}.${checkName("config key", key)}`;
  return node === undefined ? base : `${base}.${checkName("node", node)}`;
}

export function parseConfigKey(key: string): { module: string; key: string; node?: string } {
  const [module, name, node, extra] = key.split(".");
  if (extra === undefined && isName("module", module) && isName("config key", name)) {
    if (node === undefined) return { module, key: name };
    if (isName("node", node)) return { module, key: name, node };
  }
  throw invalidKey(key, "<module>.<key> or <module>.<key>.<node>");
}

/** `<module>.<name>`: secrets. */
export function secretKey(module: string, name: string): string {
  return `${checkName("module", module)}.${checkName("secret", name)}`;
}

export function parseSecretKey(key: string): { module: string; name: string } {
  const [module, name] = parsePair(key, "secret", "<module>.<name>");
  return { module, name };
}

/** `<node>`: presence, compositions, composed. */
export const nodeKey = (node: string): string => checkName("node", node);

/** `<id>`: asks and answers. */
export const askKey = (id: string): string => checkName("ask", id);

/** `<digest>`: manifests and artifacts, the lowercase hex SHA-256 of the content. */
export const DIGEST_PATTERN = /^[0-9a-f]{64}$/;
export function digestKey(digest: string): string {
  if (!DIGEST_PATTERN.test(digest))
    throw invalidKey(digest, "a lowercase hex SHA-256 (64 characters)");
  return digest;
}

/** `<module>.<name>` where the name is of `second`'s kind. */
function parsePair(key: string, second: NameKind, shape: string): [string, string] {
  const [module, name, extra] = key.split(".");
  if (extra === undefined && isName("module", module) && isName(second, name))
    return [module, name];
  throw invalidKey(key, shape);
}

/** INVALID_KEY for a key or subject that is not of `shape`. */
export function invalidKey(key: string, shape: string): MeshError {
  return new MeshError(
    ErrorCode.INVALID_KEY,
    `the key ${JSON.stringify(key)} is not of the shape ${shape}; build keys with the functions in @mesh/protocol`,
    { key },
  );
}
