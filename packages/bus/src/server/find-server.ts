/**
 * Finds the `nats-server` binary the embedded server runs, and reads its version.
 *
 * The order is the one docs/design.md gives: `MESH_NATS_SERVER`, then PATH, then `/usr/sbin`
 * (Debian's package installs the binary there, and /usr/sbin is not on an ordinary user's PATH).
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { promisify } from "node:util";
import { Env, ErrorCode, MeshError } from "@mesh/protocol";

/** The oldest server the mesh speaks to: the v3 client's KV and direct gets need 2.9. */
export const MIN_SERVER_VERSION = "2.9.0";

/**
 * The first version whose `jetstream {}` block knows `sync_interval` (NATS docs, configuration
 * reference: "sync_interval … 2.10.0"). 2.9.10 refuses the config with `unknown field
 * "sync_interval"` (verified), so it is written only from this version on.
 */
export const SYNC_INTERVAL_SINCE = "2.10.0";

/** Where the binary is looked for when neither the environment nor PATH has it. */
export const DEFAULT_SERVER_DIRS: readonly string[] = ["/usr/sbin"];

const BINARY = "nats-server";

const execFileAsync = promisify(execFile);

/** A found binary and the version it reports. */
export interface NatsServerBinary {
  /** Absolute path of the executable. */
  readonly path: string;
  /** `major.minor.patch`, e.g. `2.9.10` (a pre-release suffix is dropped). */
  readonly version: string;
}

export interface FindServerOptions {
  /** The environment to read `MESH_NATS_SERVER` and `PATH` from; `process.env` by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Folders searched after PATH; `/usr/sbin` by default. */
  readonly dirs?: readonly string[];
  /** How long `nats-server --version` may take. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Finds `nats-server` and checks its version.
 *
 * Throws SERVER_NOT_FOUND (with how to install it) when there is none, and SERVER_UNSUPPORTED
 * when it is older than {@link MIN_SERVER_VERSION} or its version cannot be read. A
 * `MESH_NATS_SERVER` that names no executable is an error of its own: the operator asked for
 * that binary, so silently running another would hide the mistake.
 */
export async function findServer(options: FindServerOptions = {}): Promise<NatsServerBinary> {
  const env = options.env ?? process.env;
  const path = await locateServer(env, options.dirs ?? DEFAULT_SERVER_DIRS);
  const version = await readServerVersion(path, options);
  if (compareVersions(version, MIN_SERVER_VERSION) < 0) {
    throw new MeshError(
      ErrorCode.SERVER_UNSUPPORTED,
      `${path} is nats-server ${version}; the mesh needs ${MIN_SERVER_VERSION} or newer. ` +
        `Install a newer one (a release binary from https://github.com/nats-io/nats-server/releases) ` +
        `and set ${Env.natsServer} to its path.`,
      { path },
    );
  }
  return { path, version };
}

async function locateServer(
  env: Readonly<Record<string, string | undefined>>,
  dirs: readonly string[],
): Promise<string> {
  const fromEnv = env[Env.natsServer];
  if (fromEnv !== undefined && fromEnv !== "") {
    const path = resolve(fromEnv);
    if (await isExecutableFile(path)) return path;
    throw new MeshError(
      ErrorCode.SERVER_NOT_FOUND,
      `${Env.natsServer} is set to ${JSON.stringify(fromEnv)}, which is not an executable file. ` +
        `Point it at a nats-server binary (${MIN_SERVER_VERSION} or newer), or unset it to use ` +
        `the one on PATH or in /usr/sbin.`,
      { path },
    );
  }
  // Relative PATH entries are skipped: they would make the binary depend on the working folder.
  const pathDirs = (env["PATH"] ?? "").split(delimiter).filter((dir) => isAbsolute(dir));
  const searched = [...pathDirs, ...dirs];
  for (const dir of searched) {
    const candidate = join(dir, BINARY);
    if (await isExecutableFile(candidate)) return candidate;
  }
  throw new MeshError(
    ErrorCode.SERVER_NOT_FOUND,
    `no nats-server binary was found (${Env.natsServer} is not set; looked in PATH and ` +
      `${dirs.length > 0 ? dirs.join(", ") : "no other folder"}). Install it: on Debian or Ubuntu ` +
      `\`sudo apt-get install -y nats-server\`; elsewhere download a release binary ` +
      `(${MIN_SERVER_VERSION} or newer) from https://github.com/nats-io/nats-server/releases and ` +
      `set ${Env.natsServer}=/path/to/nats-server.`,
  );
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs `<path> --version` (prints `nats-server: v2.9.10`) and returns `2.9.10`. */
async function readServerVersion(path: string, options: FindServerOptions): Promise<string> {
  let output: string;
  try {
    const { stdout, stderr } = await execFileAsync(path, ["--version"], {
      timeout: options.timeoutMs ?? 10_000,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    output = `${stdout}${stderr}`;
  } catch (error) {
    if (options.signal?.aborted === true) {
      throw new MeshError(ErrorCode.ABORTED, `reading the version of ${path} was aborted`, {
        path,
        cause: error,
      });
    }
    throw new MeshError(
      ErrorCode.SERVER_UNSUPPORTED,
      `\`${path} --version\` failed (${errorText(error)}); check that it is a nats-server binary ` +
        `for this machine, or set ${Env.natsServer} to one.`,
      { path, cause: error },
    );
  }
  const version = parseServerVersion(output);
  if (version === undefined) {
    throw new MeshError(
      ErrorCode.SERVER_UNSUPPORTED,
      `\`${path} --version\` printed ${JSON.stringify(output.trim().slice(0, 200))}, which names ` +
        `no version; expected e.g. "nats-server: v2.9.10". Set ${Env.natsServer} to a nats-server binary.`,
      { path },
    );
  }
  return version;
}

/** `2.9.10` from `nats-server: v2.9.10` (also `v2.11.0-RC.1` → `2.11.0`), or undefined. */
export function parseServerVersion(text: string): string | undefined {
  const match = /\bv?(\d+)\.(\d+)\.(\d+)/.exec(text);
  if (match === null) return undefined;
  return `${Number(match[1])}.${Number(match[2])}.${Number(match[3])}`;
}

/** Negative, zero or positive as `a` is older than, the same as, or newer than `b`. */
export function compareVersions(a: string, b: string): number {
  const left = versionParts(a);
  const right = versionParts(b);
  for (let i = 0; i < 3; i++) {
    const difference = (left[i] ?? 0) - (right[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** Whether a server of this version accepts `sync_interval` in its jetstream block. */
export function supportsSyncInterval(version: string): boolean {
  return compareVersions(version, SYNC_INTERVAL_SINCE) >= 0;
}

function versionParts(version: string): number[] {
  const parsed = parseServerVersion(version);
  if (parsed === undefined) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${JSON.stringify(version)} is not a version; expected major.minor.patch, e.g. "2.9.10"`,
    );
  }
  return parsed.split(".").map(Number);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
