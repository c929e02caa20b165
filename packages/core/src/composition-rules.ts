/**
 * The rules a node's composition keeps, by the code its refusal carries: the closed table
 * `compose` and its parts (resources, the runtime's process) say a refusal with.
 */

/** Why a composition was refused, and what would let it through. */
export const CompositionRule = {
  "runtime-one-bundle": "the runtime module declares exactly one bundle",
  "runtime-one-entrypoint": "the runtime's bundle has exactly one entrypoint",
  "runtime-language": "the runtime's bundle is in a language the mesh has an interpreter for",
  "runtime-broker-secret": "the runtime module declares its broker own-secret",
  "host-one-bundle":
    "the host module (mesh-host) is one bundle with one entrypoint and declares no process",
  "artifact-store-missing": "every source is routed through the artifact store",
  "bundle-digest-missing": "a delivered bundle has the digest its build gave it",
  "process-bundle-exists": "a process runs a bundle its manifest declares",
  "process-run-needed": "a process without run has a bundle with an entrypoint and an interpreter",
  "module-once": "each module is wanted once",
  "name-valid": "the node and every module, bundle, process and secret have valid names",
  "account-valid": "the operator account is a user name and its home an absolute path",
  "root-valid": "the node's root is an absolute path",
} as const;
export type CompositionRuleId = keyof typeof CompositionRule;
