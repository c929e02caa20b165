/**
 * The controller's secret endpoints: set (sealed with the vault's key into mesh-secrets), list
 * (names, who set each and when, never a value) and unset. Only the controller may read or write
 * mesh-secrets, so the operator's `mesh secret` verbs come here.
 */
import type { EndpointSpec, KvBucket, Request } from "@mesh/bus";
import { Principal, Subject, secretKey, type SealedSecret } from "@mesh/protocol";
import type { z } from "zod";
import {
  SecretListAsk,
  SecretSetAsk,
  SecretUnsetAsk,
  type SecretListAnswer,
  type SecretSetAnswer,
  type SecretUnsetAnswer,
} from "./controller-api.js";
import type { Vault } from "./vault.js";
import { readAsk } from "./ask-input.js";

export interface SecretEndpointsInput {
  readonly bucket: KvBucket<SealedSecret>;
  readonly vault: Vault;
  readonly now: () => Date;
}

export function secretEndpoints(input: SecretEndpointsInput): EndpointSpec[] {
  return [
    { name: "secret-set", subject: Subject.secretSet, handler: (r) => secretSet(input, r) },
    { name: "secret-list", subject: Subject.secretList, handler: (r) => secretList(input, r) },
    { name: "secret-unset", subject: Subject.secretUnset, handler: (r) => secretUnset(input, r) },
  ];
}

function parse<T>(schema: z.ZodType<T>, request: Request, shape: string): T {
  return readAsk(schema, request, `a ${request.subject.split(".").pop() ?? ""} ask`, shape);
}

async function secretSet(input: SecretEndpointsInput, request: Request): Promise<SecretSetAnswer> {
  const { module, name, value } = parse(
    SecretSetAsk,
    request,
    "{module, name, value} (a module name, a secret name, at most 64 KiB)",
  );
  const key = secretKey(module, name);
  const at = input.now().toISOString();
  const sealed = { ...input.vault.seal(value, key), by: Principal.operator, at };
  await input.bucket.put(key, sealed);
  return { module, name, at };
}

async function secretList(
  input: SecretEndpointsInput,
  request: Request,
): Promise<SecretListAnswer> {
  const { module } = parse(SecretListAsk, request, "{module}");
  const secrets: SecretListAnswer["secrets"] = [];
  for (const key of (await input.bucket.keys(`${module}.*`)).sort()) {
    const entry = await input.bucket.get(key);
    if (entry === undefined) continue; // unset between the listing and the read
    secrets.push({ name: key.slice(module.length + 1), by: entry.value.by, at: entry.value.at });
  }
  return { module, secrets };
}

async function secretUnset(
  input: SecretEndpointsInput,
  request: Request,
): Promise<SecretUnsetAnswer> {
  const { module, name } = parse(SecretUnsetAsk, request, "{module, name}");
  const key = secretKey(module, name);
  const removed = (await input.bucket.get(key)) !== undefined;
  if (removed) await input.bucket.delete(key);
  return { module, name, removed };
}
