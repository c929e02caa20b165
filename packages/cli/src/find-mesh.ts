/**
 * How every verb finds its mesh (docs/design.md "Operators"): a credential file named by
 * `--credential FILE` or `MESH_CREDENTIAL`, else the operator's credential that `mesh up` keeps
 * under `--root` (default `./.mesh`) at `<root>/credentials/operator.json`.
 */
import { MeshBus } from "@mesh/bus";
import { Env, Principal } from "@mesh/protocol";
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
  return credentialPath(rootPaths(options.root ?? "./.mesh"), Principal.operator);
}

/**
 * Connects to the mesh with the credential {@link credentialFileFor} finds. A missing or unreadable
 * file is CREDENTIAL_INVALID, whose message says to run `mesh up` or name a credential.
 */
export async function connectToMesh(
  options: FindMeshOptions & { readonly signal?: AbortSignal } = {},
): Promise<MeshBus> {
  return MeshBus.connectWithFile(credentialFileFor(options), {
    name: "mesh-cli",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}
