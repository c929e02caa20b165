/**
 * What the controller seals into a node's `need` resources: a module's credential from the
 * broker, or a secret opened from the vault, and the key a credential logs in with.
 */
import {
  hostCredentialContext,
  secretKey,
  type Composed,
  type NeedResource,
  type Resource,
  type SealedSecret,
} from "@mesh/protocol";
import { fingerprintOf } from "@mesh/core";
import type { SealCache } from "./seal-cache.js";
import { hostPrincipal, principalUser, renewalPrincipal, type Broker } from "./broker.js";
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
 * A host's own credential file as the controller hands it over (at join, in its composition, on
 * `mesh.renew.<node>`): with its renewal login when JWTs expire (decision 0150).
 */
export function hostCredentialText(broker: Broker, node: string): string {
  const host = broker.credential(hostPrincipal(node).user);
  const renewal = renewalPrincipal(node).user;
  if (!broker.renews || broker.get(renewal) === undefined) return `${JSON.stringify(host)}\n`;
  const { jwt, seed } = broker.credential(renewal);
  if (jwt === undefined || seed === undefined) return `${JSON.stringify(host)}\n`;
  return `${JSON.stringify({ ...host, renewal: { jwt, seed } })}\n`;
}

/**
 * Accounts mode: the host's own credential sealed to its key for its composition, so that a
 * renewed one, or one with a new key after its grant moved, reaches the host without a join.
 */
export async function sealedHostCredential(
  broker: Broker,
  seals: SealCache,
  node: string,
  publicKey: string,
): Promise<string | undefined> {
  if (!broker.signed || broker.get(hostPrincipal(node).user) === undefined) return undefined;
  const plaintext = hostCredentialText(broker, node);
  return seals.sealFor({ node, needId: hostCredentialContext(node), publicKey, plaintext });
}

/**
 * Ensures a node's host user (and its renewal login when JWTs expire) is as the controller
 * wants it: its grant is the code's, its key new if that moved.
 */
export async function ensureHost(broker: Broker, node: string): Promise<void> {
  await broker.ensure(hostPrincipal(node));
  if (broker.renews) await broker.ensure(renewalPrincipal(node));
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

/**
 * A refused node's kept composition with its renewed credentials sealed in and nothing else
 * changed (what it runs stays as it is, and keeps its bus); undefined when nothing moved. A
 * credential whose key is no longer its user's is left: only a composition changes grants.
 */
export async function withRenewedCredentials(
  kept: Composed,
  input: { readonly broker: Broker; readonly seals: SealCache; readonly publicKey: string },
): Promise<Composed | undefined> {
  const { broker, seals, publicKey } = input;
  const node = kept.node;
  let moved = false;
  const resources: Resource[] = [];
  for (const r of kept.resources) {
    const user = r.type === "need" ? broker.get(principalUser(node, r.module)) : undefined;
    if (r.type !== "need" || user === undefined || r.holder !== user.publicKey) {
      resources.push(r);
      continue;
    }
    const plaintext = `${JSON.stringify(broker.credential(user.user))}\n`;
    const sealed = await seals.sealFor({ node, needId: r.id, publicKey, plaintext });
    moved ||= sealed !== r.sealed;
    resources.push({ ...r, sealed });
  }
  const hostCredential =
    kept.hostCredential === undefined
      ? undefined
      : await sealedHostCredential(broker, seals, node, publicKey);
  moved ||= hostCredential !== kept.hostCredential;
  if (!moved) return undefined;
  const { fingerprint: _was, ...rest } = kept;
  const value = { ...rest, resources, ...(hostCredential === undefined ? {} : { hostCredential }) };
  return { ...value, fingerprint: fingerprintOf(value) };
}
