/**
 * The folder a `mesh up` keeps everything in (`--root`, default `./.mesh`): the bus's config and
 * store, the users list, each principal's credential, and a lock that says a `mesh up` runs here.
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { writeFileAtomic } from "@mesh/kit";

export interface RootPaths {
  readonly root: string;
  /** The embedded bus's folder: config, JetStream store, log. */
  readonly bus: string;
  readonly credentials: string;
  /** The principals' bus users (bcrypt hashes and permissions, never a password). */
  readonly users: string;
  /** What this root remembers between runs (the bus port, the node name). */
  readonly state: string;
  readonly lock: string;
}

export function rootPaths(root: string): RootPaths {
  const abs = resolve(root);
  return {
    root: abs,
    bus: join(abs, "bus"),
    credentials: join(abs, "credentials"),
    users: join(abs, "users.json"),
    state: join(abs, "mesh.json"),
    lock: join(abs, "up.pid"),
  };
}

export const credentialPath = (paths: RootPaths, principal: string): string =>
  join(paths.credentials, `${principal}.json`);

/** A random password: 32 bytes, URL-safe base64. */
export const randomPassword = (): string => randomBytes(32).toString("base64url");

/** Reads a JSON file, or undefined when there is none. */
export async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MeshError(
      ErrorCode.INTERNAL,
      `cannot read ${path}: ${(error as Error).message}; move it away and run again`,
      {
        path,
        cause: error,
      },
    );
  }
}

/** Writes a JSON file atomically with mode 0600 (these files name users and hashes). */
export async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

/**
 * Takes the root for this process, or refuses with ROOT_IN_USE when a live `mesh up` holds it.
 * A lock left by a process that died is taken over. Returns the release function.
 */
export async function lockRoot(paths: RootPaths): Promise<() => Promise<void>> {
  await mkdir(paths.root, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(paths.lock, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return async () => {
        await unlink(paths.lock).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number.parseInt(await readFile(paths.lock, "utf8").catch(() => ""), 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new MeshError(
          ErrorCode.ROOT_IN_USE,
          `a mesh is already running in ${paths.root} (process ${holder}); stop it first (Ctrl-C where it runs, or kill ${holder}), or pick another --root`,
          { path: paths.root },
        );
      }
      await unlink(paths.lock).catch(() => undefined); // stale: its process is gone
    }
  }
  throw new MeshError(
    ErrorCode.ROOT_IN_USE,
    `could not take the lock ${paths.lock}; remove it if no mesh runs in ${paths.root}`,
    {
      path: paths.lock,
    },
  );
}

/** Whether a process with this pid runs (one of another user's counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
