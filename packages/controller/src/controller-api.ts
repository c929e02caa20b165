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

/**
 * One of the controller's endpoints for the operator: its subject, what a refusal of an ask that
 * does not parse says (`<what> is <shape>: …`), and the schemas of what is asked (the controller
 * reads the ask with it) and answered (the asker checks the answer with it).
 */
export interface ControllerEndpoint<Ask extends z.ZodType, Answer extends z.ZodType> {
  readonly subject: string;
  readonly what: string;
  readonly shape: string;
  readonly ask: Ask;
  readonly answer: Answer;
}

/** What `endpoint` is asked. */
export type AskOf<E extends ControllerEndpoint<z.ZodType, z.ZodType>> = z.infer<E["ask"]>;
/** What `endpoint` answers. */
export type AnswerOf<E extends ControllerEndpoint<z.ZodType, z.ZodType>> = z.infer<E["answer"]>;

/** An ask of `endpoint`: the request, and its answer checked against the answer's schema. */
function asker<Ask extends z.ZodType, Answer extends z.ZodType>(
  endpoint: ControllerEndpoint<Ask, Answer>,
): (bus: MeshBus, ask: z.infer<Ask>, options?: AskOptions) => Promise<z.infer<Answer>> {
  return async (bus, ask, options = {}) =>
    endpoint.answer.parse(await request(bus, endpoint.subject, ask, options));
}

/** `mesh.controller.join-token`. */
export const JoinToken = {
  subject: Subject.joinToken,
  what: "a join-token ask",
  shape: "{ttlSeconds?} (at most a week)",
  ask: z
    .object({
      ttlSeconds: z
        .number()
        .int()
        .positive()
        .max(7 * 24 * 3600)
        .optional(),
    })
    .strict(),
  answer: z
    .object({ token: z.string().min(1), id: z.string().min(1), expiresAt: z.string() })
    .strict(),
};
export const askJoinToken = asker(JoinToken);

/** The largest secret value taken: a file a module reads, not a data store. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** `mesh.controller.secret-set`. */
export const SecretSet = {
  subject: Subject.secretSet,
  what: "a secret-set ask",
  shape: "{module, name, value} (a module name, a secret name, at most 64 KiB)",
  ask: z
    .object({
      module: z.string().regex(NAME_PATTERN),
      name: z.string().regex(KEY_NAME_PATTERN),
      value: z.string().max(MAX_SECRET_BYTES),
    })
    .strict(),
  answer: z.object({ module: z.string(), name: z.string(), at: z.string() }).strict(),
};
export const askSecretSet = asker(SecretSet);

/** `mesh.controller.secret-list`: a module's secret names and when each was set. */
export const SecretList = {
  subject: Subject.secretList,
  what: "a secret-list ask",
  shape: "{module}",
  ask: z.object({ module: z.string().regex(NAME_PATTERN) }).strict(),
  answer: z
    .object({
      module: z.string(),
      secrets: z.array(z.object({ name: z.string(), by: z.string(), at: z.string() }).strict()),
    })
    .strict(),
};
export const askSecretList = asker(SecretList);

/** `mesh.controller.secret-unset`: removes a module's secret; `removed` says whether it was set. */
export const SecretUnset = {
  subject: Subject.secretUnset,
  what: "a secret-unset ask",
  shape: "{module, name}",
  ask: z
    .object({ module: z.string().regex(NAME_PATTERN), name: z.string().regex(KEY_NAME_PATTERN) })
    .strict(),
  answer: z.object({ module: z.string(), name: z.string(), removed: z.boolean() }).strict(),
};
export const askSecretUnset = asker(SecretUnset);

/**
 * `mesh.controller.mcp-credential`: an mcp credential narrowed to `modules` (`mesh mcp --allow`),
 * sealed to `publicKey` (X25519, as a join's) so that only the asker opens it. It answers
 * `principal`, `mcp-<digest>`, and `sealed`, the credential file's content, for `mcpSealContext`.
 */
export const McpCredential = {
  subject: Subject.mcpCredential,
  what: "an mcp-credential ask",
  shape: "{modules: [module names, at least one], publicKey}",
  ask: z
    .object({
      modules: z.array(z.string().regex(NAME_PATTERN)).min(1),
      publicKey: z.string().min(1),
    })
    .strict(),
  answer: z
    .object({ principal: z.string(), modules: z.array(z.string()), sealed: z.string().min(1) })
    .strict(),
};
export const askMcpCredential = asker(McpCredential);

/**
 * `mesh.controller.view-credential`: the credential `mesh view --listen`'s sessions of one access
 * act with (decision 0171), sealed to `publicKey` so that only the asker opens it. It answers
 * `principal`, `view` or `view-read`, and `sealed`, the credential file's, for `viewSealContext`.
 */
export const ViewCredential = {
  subject: Subject.viewCredential,
  what: "a view-credential ask",
  shape: '{access: "operate" | "read", publicKey}',
  ask: z.object({ access: z.enum(["operate", "read"]), publicKey: z.string().min(1) }).strict(),
  answer: z
    .object({ principal: z.enum(["view", "view-read"]), sealed: z.string().min(1) })
    .strict(),
};
export const askViewCredential = asker(ViewCredential);

/**
 * `mesh.controller.condition-resolve`: says the kept condition `<module>.<name>` resolved. It
 * answers `resolved`, false when it was resolved already, and `condition`, the one that stands now.
 */
export const ConditionResolve = {
  subject: Subject.conditionResolve,
  what: "a condition-resolve ask",
  shape: "{module, name}",
  ask: z
    .object({ module: z.string().regex(NAME_PATTERN), name: z.string().regex(NAME_PATTERN) })
    .strict(),
  answer: z.object({ resolved: z.boolean(), condition: Condition }).strict(),
};
export const askConditionResolve = asker(ConditionResolve);
