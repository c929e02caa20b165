/**
 * The controller's secret endpoints: set (sealed with the vault's key into mesh-secrets), list
 * (names, who set each and when, never a value) and unset. Only the controller may read or write
 * mesh-secrets, so the operator's `mesh secret` verbs come here.
 */
import type { EndpointSpec, KvBucket } from "@mesh/bus";
import { Principal, secretKey, type SealedSecret } from "@mesh/protocol";
import { SecretList, SecretSet, SecretUnset, type AnswerOf, type AskOf } from "./controller-api.js";
import type { Vault } from "./vault.js";
import { answering } from "./ask-input.js";

export interface SecretEndpointsInput {
  readonly bucket: KvBucket<SealedSecret>;
  readonly vault: Vault;
  readonly now: () => Date;
}

export function secretEndpoints(input: SecretEndpointsInput): EndpointSpec[] {
  return [
    answering(SecretSet, (ask) => secretSet(input, ask)),
    answering(SecretList, (ask) => secretList(input, ask)),
    answering(SecretUnset, (ask) => secretUnset(input, ask)),
  ];
}

async function secretSet(
  input: SecretEndpointsInput,
  { module, name, value }: AskOf<typeof SecretSet>,
): Promise<AnswerOf<typeof SecretSet>> {
  const key = secretKey(module, name);
  const at = input.now().toISOString();
  const sealed = { ...input.vault.seal(value, key), by: Principal.operator, at };
  await input.bucket.put(key, sealed);
  return { module, name, at };
}

async function secretList(
  input: SecretEndpointsInput,
  { module }: AskOf<typeof SecretList>,
): Promise<AnswerOf<typeof SecretList>> {
  const secrets: AnswerOf<typeof SecretList>["secrets"] = [];
  for (const key of (await input.bucket.keys(`${module}.*`)).sort()) {
    const entry = await input.bucket.get(key);
    if (entry === undefined) continue; // unset between the listing and the read
    secrets.push({ name: key.slice(module.length + 1), by: entry.value.by, at: entry.value.at });
  }
  return { module, secrets };
}

async function secretUnset(
  input: SecretEndpointsInput,
  { module, name }: AskOf<typeof SecretUnset>,
): Promise<AnswerOf<typeof SecretUnset>> {
  const key = secretKey(module, name);
  const removed = (await input.bucket.get(key)) !== undefined;
  if (removed) await input.bucket.delete(key);
  return { module, name, removed };
}
