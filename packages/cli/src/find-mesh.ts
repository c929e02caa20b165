/**
 * How every verb finds its mesh (docs/design.md "Operators"): a credential file named by
 * `--credential FILE` or `MESH_CREDENTIAL`, else the operator's credential that `mesh up` keeps
 * under its root at `<root>/credentials/operator.json`: `--root`, else `MESH_ROOT`, else
 * `./.mesh` in the current folder.
 */
import { resolve } from "node:path";
import { MeshBus } from "@mesh/bus";
import { Env, ErrorCode, MeshError, Principal, isMeshError } from "@mesh/protocol";

/** The environment variable that names the root when `--root` does not. */
export const ROOT_ENV = "MESH_ROOT";
/** The root when neither `--root` nor `MESH_ROOT` names one. */
export const DEFAULT_ROOT = "./.mesh";
import { credentialPath, rootPaths } from "./mesh-root.js";

export interface FindMeshOptions {
  /** The root a `mesh up` keeps its files in. */
  readonly root?: string;
  /** A credential file; wins over `MESH_CREDENTIAL` and the root. */
  readonly credential?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** The credential file a verb speaks with. */
export function credentialFileFor(options: FindMeshOptions): string {
  const fromEnv = (options.env ?? process.env)[Env.credential];
  if (options.credential !== undefined && options.credential !== "") return options.credential;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  return credentialPath(rootPaths(rootOf(options)), Principal.operator);
}

/** The root a verb looks in: `--root`, `MESH_ROOT`, or `./.mesh`. */
export function rootOf(options: FindMeshOptions): string {
  const fromEnv = (options.env ?? process.env)[ROOT_ENV];
  if (options.root !== undefined && options.root !== "") return options.root;
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : DEFAULT_ROOT;
}

/**
 * Connects to the mesh with the credential {@link credentialFileFor} finds. A missing or unreadable
 * file is CREDENTIAL_INVALID, whose message says to run `mesh up` or name a credential.
 */
export async function connectToMesh(
  options: FindMeshOptions & { readonly signal?: AbortSignal } = {},
): Promise<MeshBus> {
  const file = credentialFileFor(options);
  try {
    return await MeshBus.connectWithFile(file, {
      name: "mesh-cli",
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (error) {
    throw noMeshHere(error, file, options) ?? error;
  }
}

/**
 * A root with no operator credential in it, said as what the user most likely got wrong: the
 * verb ran in another folder than the mesh's (a module's own folder, say) without naming the root.
 */
function noMeshHere(error: unknown, file: string, options: FindMeshOptions): MeshError | undefined {
  const env = options.env ?? process.env;
  const named =
    (options.credential ?? "") !== "" ||
    (env[Env.credential] ?? "") !== "" ||
    (options.root ?? "") !== "";
  if (named || !isMeshError(error, ErrorCode.CREDENTIAL_INVALID)) return undefined;
  if ((error.cause as NodeJS.ErrnoException | undefined)?.code !== "ENOENT") return undefined;
  const root = rootOf(options);
  const where = (env[ROOT_ENV] ?? "") !== "" ? `${ROOT_ENV}=${root}` : `the default root ${root}`;
  return new MeshError(
    ErrorCode.CREDENTIAL_INVALID,
    `no mesh at ${where}: ${resolve(file)} does not exist; name the root \`mesh up\` was ` +
      `given, with --root DIR after the verb or ${ROOT_ENV}=DIR for the shell (or run \`mesh up\` ` +
      `to start a mesh in this folder)`,
    { path: file, cause: error },
  );
}
