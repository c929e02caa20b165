/**
 * The controller's request endpoints for the operator, and the calls the CLI makes to them. Only
 * the controller holds the vault's key and the broker, so making a join token and setting,
 * listing (names and when, never values) and unsetting secrets go through it, and so does
 * resolving a condition (the operator does not speak as a module); the operator's
 * credential may ask these subjects and nothing else of the controller's.
 */
import { z } from "zod";
import { Condition, KEY_NAME_PATTERN, NAME_PATTERN, Subject } from "@mesh/protocol";
import { request, type MeshBus } from "@mesh/bus";

/** How a caller asks one of the controller's endpoints: a deadline, a signal. */
export interface AskOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

/** An ask of one endpoint: the request, and its answer checked against the answer's schema. */
function asker<Ask, Answer>(
  subject: string,
  answer: z.ZodType<Answer>,
): (bus: MeshBus, ask: Ask, options?: AskOptions) => Promise<Answer> {
  return async (bus, ask, options = {}) => answer.parse(await request(bus, subject, ask, options));
}

/** `mesh.controller.join-token`. */
export const JoinTokenAsk = z
  .object({
    ttlSeconds: z
      .number()
      .int()
      .positive()
      .max(7 * 24 * 3600)
      .optional(),
  })
  .strict();
export type JoinTokenAsk = z.infer<typeof JoinTokenAsk>;
export const JoinTokenAnswer = z
  .object({ token: z.string().min(1), id: z.string().min(1), expiresAt: z.string() })
  .strict();
export type JoinTokenAnswer = z.infer<typeof JoinTokenAnswer>;

/** The largest secret value taken: a file a module reads, not a data store. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** `mesh.controller.secret-set`. */
export const SecretSetAsk = z
  .object({
    module: z.string().regex(NAME_PATTERN),
    name: z.string().regex(KEY_NAME_PATTERN),
    value: z.string().max(MAX_SECRET_BYTES),
  })
  .strict();
export type SecretSetAsk = z.infer<typeof SecretSetAsk>;
export const SecretSetAnswer = z
  .object({ module: z.string(), name: z.string(), at: z.string() })
  .strict();
export type SecretSetAnswer = z.infer<typeof SecretSetAnswer>;

/** `mesh.controller.secret-list`: a module's secret names and when each was set. */
export const SecretListAsk = z.object({ module: z.string().regex(NAME_PATTERN) }).strict();
export type SecretListAsk = z.infer<typeof SecretListAsk>;
export const SecretListAnswer = z
  .object({
    module: z.string(),
    secrets: z.array(z.object({ name: z.string(), by: z.string(), at: z.string() }).strict()),
  })
  .strict();
export type SecretListAnswer = z.infer<typeof SecretListAnswer>;

/** `mesh.controller.secret-unset`: removes a module's secret; `removed` says whether it was set. */
export const SecretUnsetAsk = z
  .object({ module: z.string().regex(NAME_PATTERN), name: z.string().regex(KEY_NAME_PATTERN) })
  .strict();
export type SecretUnsetAsk = z.infer<typeof SecretUnsetAsk>;
export const SecretUnsetAnswer = z
  .object({ module: z.string(), name: z.string(), removed: z.boolean() })
  .strict();
export type SecretUnsetAnswer = z.infer<typeof SecretUnsetAnswer>;

/**
 * `mesh.controller.mcp-credential`: an mcp credential narrowed to `modules` (`mesh mcp --allow`),
 * sealed to `publicKey` (X25519, as a join's) so that only the asker opens it.
 */
export const McpCredentialAsk = z
  .object({
    modules: z.array(z.string().regex(NAME_PATTERN)).min(1),
    publicKey: z.string().min(1),
  })
  .strict();
export type McpCredentialAsk = z.infer<typeof McpCredentialAsk>;
/** `principal`: `mcp-<digest>`; `sealed`: the credential file's content, for `mcpSealContext`. */
export const McpCredentialAnswer = z
  .object({ principal: z.string(), modules: z.array(z.string()), sealed: z.string().min(1) })
  .strict();
export type McpCredentialAnswer = z.infer<typeof McpCredentialAnswer>;

export const askMcpCredential = asker<McpCredentialAsk, McpCredentialAnswer>(
  Subject.mcpCredential,
  McpCredentialAnswer,
);

/**
 * `mesh.controller.view-credential`: the credential `mesh view --listen`'s sessions of one access
 * act with (decision 0171), sealed to `publicKey` so that only the asker opens it.
 */
export const ViewCredentialAsk = z
  .object({ access: z.enum(["operate", "read"]), publicKey: z.string().min(1) })
  .strict();
export type ViewCredentialAsk = z.infer<typeof ViewCredentialAsk>;
/** `principal`: `view` or `view-read`; `sealed`: the credential file's, for `viewSealContext`. */
export const ViewCredentialAnswer = z
  .object({ principal: z.enum(["view", "view-read"]), sealed: z.string().min(1) })
  .strict();
export type ViewCredentialAnswer = z.infer<typeof ViewCredentialAnswer>;

export const askViewCredential = asker<ViewCredentialAsk, ViewCredentialAnswer>(
  Subject.viewCredential,
  ViewCredentialAnswer,
);

export const askJoinToken = asker<JoinTokenAsk, JoinTokenAnswer>(
  Subject.joinToken,
  JoinTokenAnswer,
);

export const askSecretSet = asker<SecretSetAsk, SecretSetAnswer>(
  Subject.secretSet,
  SecretSetAnswer,
);

export const askSecretList = asker<SecretListAsk, SecretListAnswer>(
  Subject.secretList,
  SecretListAnswer,
);

export const askSecretUnset = asker<SecretUnsetAsk, SecretUnsetAnswer>(
  Subject.secretUnset,
  SecretUnsetAnswer,
);

/** `mesh.controller.condition-resolve`: says the kept condition `<module>.<name>` resolved. */
export const ConditionResolveAsk = z
  .object({ module: z.string().regex(NAME_PATTERN), name: z.string().regex(NAME_PATTERN) })
  .strict();
export type ConditionResolveAsk = z.infer<typeof ConditionResolveAsk>;
/** `resolved`: false when it was resolved already; `condition`: the one that stands now. */
export const ConditionResolveAnswer = z
  .object({ resolved: z.boolean(), condition: Condition })
  .strict();
export type ConditionResolveAnswer = z.infer<typeof ConditionResolveAnswer>;

export const askConditionResolve = asker<ConditionResolveAsk, ConditionResolveAnswer>(
  Subject.conditionResolve,
  ConditionResolveAnswer,
);
