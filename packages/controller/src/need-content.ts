/**
 * What the controller seals into a node's `need` resources: a module's credential from the
 * broker, or a secret opened from the vault, and the key a credential logs in with.
 */
import { secretKey, type NeedResource, type SealedSecret } from "@mesh/protocol";
import { principalUser, type Broker } from "./broker.js";
import type { Vault } from "./vault.js";

export interface NeedSources {
  readonly broker: Broker;
  /** The secrets kept in `mesh-secrets`, sealed with the vault's key, by `<module>.<name>`. */
  readonly secrets: ReadonlyMap<string, SealedSecret>;
  readonly vault: Vault;
  readonly log?: (line: string) => void;
}

/** What a need's file holds: the module's credential, or the secret from the vault. */
export function needContent(
  sources: NeedSources,
  node: string,
  need: Pick<NeedResource, "kind" | "module" | "name">,
): string | undefined {
  const { broker, secrets, vault } = sources;
  if (need.kind === "credential") {
    const user = principalUser(node, need.module);
    return broker.get(user) === undefined
      ? undefined
      : `${JSON.stringify(broker.credential(user))}\n`;
  }
  const key = secretKey(need.module, need.name);
  const sealed = secrets.get(key);
  if (sealed === undefined) return undefined;
  try {
    return vault.open(sealed, key).toString("utf8");
  } catch (error) {
    sources.log?.(`controller: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * The public key a credential need logs in with (accounts mode): a renewal keeps it, so the
 * host does not restart the process for it (decision 0150).
 */
export function holderOf(
  broker: Broker,
  node: string,
  need: Pick<NeedResource, "kind" | "module">,
): string | undefined {
  if (need.kind !== "credential") return undefined;
  return broker.get(principalUser(node, need.module))?.publicKey;
}
