/**
 * This machine as a node of the mesh `mesh up` runs: its host's credential comes through the same
 * door every other node uses — a one-time join token from the controller, the node's public key
 * presented on `mesh.join`, and the credential sealed back to it — so the broker issues it, and
 * it is only ever on disk here, 0600.
 */
import { join } from "node:path";
import { ErrorCode, MeshError, isMeshError, type Credential } from "@mesh/protocol";
import {
  loadOrCreateNodeKeys,
  readCredential,
  requestJoin,
  writeCredential,
  type MeshBus,
} from "@mesh/bus";
import { askJoinToken } from "@mesh/controller";

export interface LocalNodeOptions {
  readonly operator: MeshBus;
  readonly node: string;
  readonly servers: readonly string[];
  /** The bus certificate to pin, when the bus speaks TLS. */
  readonly pin?: { readonly fingerprint: string; readonly ca: string } | undefined;
  /** The host's root (the mesh's root): its node key is `<root>/node.key`. */
  readonly root: string;
  /** Where the host's credential is kept. */
  readonly credentialFile: string;
  readonly signal: AbortSignal;
  readonly say: (line: string) => void;
}

/** The host's credential for this node: the one kept from an earlier run, or a new one by joining. */
export async function ensureHostCredential(options: LocalNodeOptions): Promise<Credential> {
  const kept = await readCredential(options.credentialFile).catch(() => undefined);
  if (
    kept !== undefined &&
    kept.node === options.node &&
    kept.servers.join(",") === options.servers.join(",") &&
    kept.fingerprint === options.pin?.fingerprint
  ) {
    return kept;
  }
  const keys = await loadOrCreateNodeKeys(join(options.root, "node.key"));
  const { token } = await untilAnswered(
    () => askJoinToken(options.operator, {}, { signal: options.signal }),
    options,
    "the controller to hand out a join token",
  );
  const credential = await requestJoin({
    servers: options.servers,
    token,
    node: options.node,
    keys,
    signal: options.signal,
    ...options.pin,
  });
  await writeCredential(options.credentialFile, credential);
  options.say(`${options.node} joined the mesh; its host credential is ${options.credentialFile}`);
  return credential;
}

/** Retries while nothing answers yet (the controller is still starting), for up to two minutes. */
async function untilAnswered<T>(
  ask: () => Promise<T>,
  options: LocalNodeOptions,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 120_000;
  let told = false;
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      const waiting =
        isMeshError(error) &&
        (error.code === ErrorCode.NOT_FOUND || error.code === ErrorCode.TIMEOUT);
      if (!waiting || options.signal.aborted) throw error;
      if (Date.now() > deadline) {
        throw new MeshError(
          ErrorCode.TIMEOUT,
          `waited two minutes for ${what}; see the controller's log in the root's logs/mesh folder`,
          { cause: error },
        );
      }
      if (!told) options.say(`waiting for ${what}`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
