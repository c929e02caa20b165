/**
 * How the host reads its composition across versions (decision 0202). A composition this host
 * applies is taken whole. One it cannot (its `requires` names a feature this host lacks, or it
 * does not match this host's schema) is *refused*: the host keeps running what it applied before
 * and says why, naming the version it needs — but it still takes the composition's `host`
 * resource, whose shape never changes, so it can be upgraded to a host that applies it.
 */
import { z } from "zod";
import {
  Composed,
  HOST_MODULE,
  HostResource,
  MESH_VERSION,
  issuesText,
  missingFeatures,
  type ComposedModule,
  type Resource,
} from "@mesh/protocol";

/** A composition this host cannot apply: what it still takes of it, and why not the rest. */
export interface RefusedComposition {
  readonly node: string;
  readonly fingerprint: string;
  /** The host build it names, taken all the same. */
  readonly host: HostResource | undefined;
  /** The build of `mesh-host` it names, for the have. */
  readonly hostBuild: string | undefined;
  /** The features this host lacks (empty: the composition does not match its schema). */
  readonly missing: readonly string[];
  /** The mesh version the composition says has them, when it says one. */
  readonly version: string | undefined;
  /** Why, in words: the features and version, or the schema's issues. */
  readonly problem: string;
}

/** A composition as the host heard it. */
export type Heard = { readonly composed: Composed } | { readonly refused: RefusedComposition };

/** What every composition, of any version, has: enough to refuse it and to take its host build. */
const Envelope = z.looseObject({
  node: z.string().min(1),
  fingerprint: z.string().min(1),
  resources: z.array(z.unknown()),
  requires: z.looseObject({ features: z.array(z.string()), version: z.string() }).optional(),
  modules: z.record(z.string(), z.unknown()).optional(),
});

/** The composition bucket's values as the host reads them. */
export const HeardComposition: z.ZodType<Heard> = z.unknown().transform((raw, ctx) => {
  const envelope = Envelope.safeParse(raw);
  if (!envelope.success) {
    for (const issue of envelope.error.issues) ctx.addIssue({ ...issue, code: "custom" });
    return z.NEVER;
  }
  const { requires } = envelope.data;
  const missing = missingFeatures(requires);
  const whole = Composed.safeParse(raw);
  if (whole.success && missing.length === 0) return { composed: whole.data };
  const hosts = envelope.data.resources.flatMap((r) => {
    const parsed = HostResource.safeParse(r);
    return parsed.success ? [parsed.data] : [];
  });
  const hostModule = envelope.data.modules?.[HOST_MODULE] as { build?: unknown } | undefined;
  const version = requires?.version;
  const problem =
    missing.length > 0
      ? `it needs host feature(s) ${missing.join(", ")}, which a host of mesh ${version ?? "(a newer version)"} has; this host is mesh ${MESH_VERSION}`
      : `it does not match the composition this host (mesh ${MESH_VERSION}) applies: ${whole.success ? "" : issuesText(whole.error)}`;
  return {
    refused: {
      node: envelope.data.node,
      fingerprint: envelope.data.fingerprint,
      host: hosts.length === 1 ? hosts[0] : undefined,
      hostBuild: typeof hostModule?.build === "string" ? hostModule.build : undefined,
      missing,
      version,
      problem,
    },
  };
});

/**
 * What the host applies while it holds a refused composition: the one it applied before (or
 * nothing), with the refused one's host build in place of its own.
 */
export function withHostOf(
  kept: Composed | undefined,
  refused: RefusedComposition,
  node: string,
): Composed {
  const base: Composed = kept ?? { node, resources: [], fingerprint: "none" };
  const resources: Resource[] = base.resources.filter((r) => r.type !== "host");
  if (refused.host !== undefined) resources.push(refused.host);
  let modules = base.modules;
  if (refused.hostBuild !== undefined) {
    const before: ComposedModule = base.modules?.[HOST_MODULE] ?? { config: {}, bound: {} };
    modules = { ...base.modules, [HOST_MODULE]: { ...before, build: refused.hostBuild } };
  }
  return { ...base, resources, ...(modules === undefined ? {} : { modules }) };
}

/**
 * The composition the host holds beside what it applied: a refused one, if any (its host build
 * taken, the rest said as the condition naming the version it needs), until one it applies comes.
 */
export class RefusedHold {
  readonly #node: string;
  readonly #say: (message: string, code: string) => void;
  readonly #resolve: (message: string, unknown: boolean) => void;
  #refused: RefusedComposition | undefined;
  /** Whether this process has heard no composition yet. */
  #first = true;

  constructor(options: {
    readonly node: string;
    readonly say: (message: string, code: string) => void;
    /**
     * Resolves the condition; `unknown`: this process said nothing of it (a host that took the
     * node over from one too old for its composition must still resolve what that one said).
     */
    readonly resolve: (message: string, unknown: boolean) => void;
  }) {
    this.#node = options.node;
    this.#say = options.say;
    this.#resolve = options.resolve;
  }

  /** A composition heard: the one to keep and apply, or undefined when it is refused. */
  heard(heard: Heard): Composed | undefined {
    const first = this.#first;
    this.#first = false;
    if ("refused" in heard) {
      const refused = heard.refused;
      this.#refused = refused;
      this.#say(
        `${this.#node}'s composition ${refused.fingerprint.slice(0, 12)}… is refused by its host: ${refused.problem}. ` +
          `The host keeps running what it applied before and takes only the composition's host build; ` +
          `upgrade the host to mesh ${refused.version ?? "(the controller's version)"} (mesh upgrade, or the mesh-host rollout)`,
        refused.missing.length > 0 ? "HOST_TOO_OLD" : "COMPOSITION_REFUSED",
      );
      return undefined;
    }
    if (this.#refused !== undefined || first) {
      this.#refused = undefined;
      this.#resolve(`${this.#node}'s host (mesh ${MESH_VERSION}) applies its composition`, first);
    }
    return heard.composed;
  }

  /** What to apply, given what was kept: it, with a refused composition's host build in place. */
  applied(kept: Composed | undefined): Composed | undefined {
    const refused = this.#refused;
    return refused === undefined ? kept : withHostOf(kept, refused, this.#node);
  }
}
