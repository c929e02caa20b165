/**
 * Module sources on disk: a directory's files and content digest (what `.gitignore` files and
 * `node_modules` exclude is left out), a git ref's commit through the `git` CLI, and archives
 * fetched from a local path or `file://` URL and checked against their digest.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import {
  lstat,
  mkdir,
  open,
  readFile,
  readdir,
  rm,
  stat,
  writeFile,
  type FileHandle,
} from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ignoreModule, { type Ignore } from "ignore";

// ignore 5 is CommonJS with `export =`; under NodeNext its default import is the module object.
const ignore = ignoreModule as unknown as () => Ignore;
import { x as untar } from "tar";
import { ErrorCode, MeshError, type ModuleSource } from "@mesh/protocol";
import { checkArchiveBytes, type ArchiveLimits } from "./archive-check.js";

const run = promisify(execFile);

/** Never part of a source, whatever its ignore files say. */
const ALWAYS_IGNORED = ["node_modules", ".git", ".mesh"];

/** Every file of a directory source, relative and `/`-separated, sorted; ignored ones left out. */
export async function listSourceFiles(
  root: string,
  options: { signal?: AbortSignal } = {},
): Promise<string[]> {
  const out: string[] = [];
  const walk = async (
    dir: string,
    rules: readonly { base: string; ig: Ignore }[],
  ): Promise<void> => {
    options.signal?.throwIfAborted();
    let here = rules;
    const gitignore = await readFile(join(dir, ".gitignore"), "utf8").catch(() => undefined);
    if (gitignore !== undefined) here = [...rules, { base: dir, ig: ignore().add(gitignore) }];
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      if (ALWAYS_IGNORED.includes(entry.name)) continue;
      const full = join(dir, entry.name);
      const isDir = entry.isDirectory();
      const ignored = here.some(({ base, ig }) => {
        const rel = relative(base, full).split(sep).join("/");
        return ig.ignores(isDir ? `${rel}/` : rel);
      });
      if (ignored) continue;
      if (isDir) await walk(full, here);
      else if (entry.isFile()) out.push(relative(root, full).split(sep).join("/"));
      // Links, sockets and devices are not source: a build never follows them out of the folder.
    }
  };
  await walk(resolve(root), []);
  return out.sort();
}

/** The digest of a directory's content: each file's path, whether it is executable, and its bytes. */
export async function directoryDigest(
  root: string,
  options: { signal?: AbortSignal } = {},
): Promise<string> {
  const hash = createHash("sha256");
  for (const path of await listSourceFiles(root, options)) {
    const full = join(root, path);
    const [bytes, info] = await Promise.all([readSourceFile(full, options), stat(full)]);
    const fileHash = createHash("sha256").update(bytes).digest("hex");
    hash.update(`${path}\u0000${(info.mode & 0o111) !== 0 ? "x" : "-"}\u0000${fileHash}\n`);
  }
  return hash.digest("hex");
}

/** Copies a directory source's files (ignored ones left out) into `to`. */
export async function copySource(
  from: string,
  to: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  for (const path of await listSourceFiles(from, options)) {
    const target = join(to, path);
    await mkdir(join(target, ".."), { recursive: true });
    await writeFile(target, await readSourceFile(join(from, path), options));
  }
}

/** One file of a directory source: listed as a regular file, and read only if it still is one. */
function readSourceFile(path: string, options: { signal?: AbortSignal }): Promise<Buffer> {
  return readRegularFile(path, {
    maxBytes: MAX_ARCHIVE_FILE_BYTES,
    what: "the source file",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

/** A local path for a `file://` URL or a plain path; undefined for other URLs. */
export function localPath(url: string): string | undefined {
  if (url.startsWith("file://")) return fileURLToPath(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[^/]+@[^/]+:/.test(url)) return undefined;
  return resolve(url);
}

async function git(
  args: readonly string[],
  options: { cwd?: string; signal?: AbortSignal } = {},
): Promise<string> {
  try {
    const { stdout } = await run("git", [...args], {
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
    });
    return stdout;
  } catch (error) {
    const raw = (error as { stderr?: unknown }).stderr;
    const stderr = (
      typeof raw === "string" ? raw : Buffer.isBuffer(raw) ? raw.toString("utf8") : ""
    ).trim();
    throw new MeshError(
      ErrorCode.SOURCE_UNAVAILABLE,
      `git ${args.join(" ")} failed: ${stderr || (error as Error).message}; check that the repository and ref exist and that git can reach it`,
      { cause: error },
    );
  }
}

/** The commit a git ref names now (`git ls-remote`; local repositories and file:// URLs work offline). */
export async function gitCommit(
  url: string,
  ref: string,
  options: { signal?: AbortSignal } = {},
): Promise<string> {
  const out = await git(["ls-remote", url, ref], options);
  const line = out.split("\n").find((l) => l.trim() !== "");
  const commit = line?.split(/\s+/)[0];
  if (commit === undefined || !/^[0-9a-f]{40,64}$/.test(commit)) {
    // A commit id given as the ref is not listed by ls-remote; it stands for itself.
    if (/^[0-9a-f]{40,64}$/.test(ref)) return ref;
    throw new MeshError(
      ErrorCode.SOURCE_UNAVAILABLE,
      `the git ref ${JSON.stringify(ref)} does not exist in ${JSON.stringify(url)}; name a branch, a tag or a commit of it`,
    );
  }
  return commit;
}

/** Checks out `commit` of `url` into the empty folder `to` (no history beyond what is needed). */
export async function gitCheckout(
  url: string,
  commit: string,
  to: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  await mkdir(to, { recursive: true });
  await git(["init", "--quiet", to], options);
  await git(["fetch", "--quiet", "--depth", "1", url, commit], { ...options, cwd: to });
  await git(["checkout", "--quiet", "FETCH_HEAD"], { ...options, cwd: to });
}

/** The most bytes a compressed archive may have (it is held in memory while it is checked). */
export const MAX_ARCHIVE_FILE_BYTES = 512 * 1024 * 1024;

/**
 * The bytes of a regular file, read without ever blocking on what is not one: the file is opened
 * non-blocking and looked at before it is read, so a FIFO, a device or a socket (which would
 * hang a plain read until someone writes to it) is refused at once, as is a file over `maxBytes`.
 */
export async function readRegularFile(
  path: string,
  options: { maxBytes: number; what: string; signal?: AbortSignal },
): Promise<Buffer> {
  const unavailable = (why: string, cause?: unknown): MeshError =>
    new MeshError(
      ErrorCode.SOURCE_UNAVAILABLE,
      `cannot read ${options.what} ${JSON.stringify(path)}: ${why}`,
      {
        path,
        ...(cause === undefined ? {} : { cause }),
      },
    );
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw unavailable(
      `${(error as NodeJS.ErrnoException).code ?? String(error)}; check the path`,
      error,
    );
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${options.what} ${JSON.stringify(path)} is not a regular file (it is a ${kindOf(info)}); only a plain file is read, so a pipe or a device can never hold up a build — give a file`,
        { path },
      );
    }
    if (info.size > options.maxBytes) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${options.what} ${JSON.stringify(path)} has ${info.size} bytes, more than the ${options.maxBytes} allowed; make it smaller`,
        { path },
      );
    }
    return await handle.readFile(options.signal === undefined ? {} : { signal: options.signal });
  } finally {
    await handle.close();
  }
}

function kindOf(info: Stats): string {
  if (info.isDirectory()) return "folder";
  if (info.isFIFO()) return "FIFO";
  if (info.isSocket()) return "socket";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  return "special file";
}

/** The bytes of an archive at a local path or file:// URL, checked against `digest` when given. */
export async function fetchArchive(
  url: string,
  digest: string | undefined,
  options: { signal?: AbortSignal } = {},
): Promise<Uint8Array> {
  const path = localPath(url);
  if (path === undefined) {
    throw new MeshError(
      ErrorCode.SOURCE_UNAVAILABLE,
      `the archive ${JSON.stringify(url)} is not a local path or file:// URL; this builder fetches only those — copy it to the builder's machine and register that path`,
    );
  }
  const bytes = await readRegularFile(path, {
    maxBytes: MAX_ARCHIVE_FILE_BYTES,
    what: "the archive",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (digest !== undefined && actual !== digest) {
    throw new MeshError(
      ErrorCode.DIGEST_MISMATCH,
      `the archive ${JSON.stringify(url)} has digest ${actual}, not the ${digest} it was registered with; it changed or is not the one meant — register it again with its digest if the change is yours`,
      { path },
    );
  }
  return bytes;
}

/**
 * Unpacks a tar.gz into `to`, after reading all of it: an archive with an entry a node would
 * refuse (climbing or absolute paths, links out, hard links, devices, FIFOs, set-id bits) or past
 * the limits is refused whole, naming each bad entry (ARCHIVE_REFUSED), and nothing is written.
 * Symbolic links inside are allowed and left out: a source is its plain files.
 */
export async function unpackArchive(
  bytes: Uint8Array,
  to: string,
  options: { what?: string; limits?: ArchiveLimits } = {},
): Promise<void> {
  await checkArchiveBytes(bytes, {
    what: options.what ?? "the archive",
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  await mkdir(to, { recursive: true });
  const file = join(
    to,
    "..",
    `.archive-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}.tgz`,
  );
  await writeFile(file, bytes);
  try {
    await untar({
      file,
      cwd: to,
      strict: true,
      preserveOwner: false,
      filter: (_path, entry) => {
        const type = (entry as { type?: string }).type;
        return type === "File" || type === "OldFile" || type === "Directory";
      },
    });
  } catch (error) {
    throw new MeshError(
      ErrorCode.ARCHIVE_REFUSED,
      `${options.what ?? "the archive"} could not be unpacked (${(error as Error).message}); repack it as a plain .tar.gz`,
      { cause: error },
    );
  } finally {
    await rm(file, { force: true });
  }
}

/** Materialises a registered source into `to`, returning the revision it is at. */
export async function materialise(
  source: ModuleSource,
  to: string,
  revision: string | undefined,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  switch (source.kind) {
    case "directory":
      await copySource(source.path, to, options);
      return;
    case "git":
      await gitCheckout(
        source.url,
        revision ?? (await gitCommit(source.url, source.ref, options)),
        to,
        options,
      );
      return;
    case "archive":
      await unpackArchive(await fetchArchive(source.url, source.digest, options), to);
      return;
  }
}

/** Whether `path` exists and is a directory. */
export async function isDirectory(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined))?.isDirectory() === true;
}
