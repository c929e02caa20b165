/**
 * The assigner's tools (decision 0190; seed 003): `put` pins a module to one build (on one node,
 * or everywhere) until `unput` lifts it. They are `mesh-assigner`'s tools bundle, loaded by the
 * runtime without a credential (a process never serves), so `mesh put`, the view and an agent
 * through `mesh mcp` all call `mesh-assigner/put`. Their code reaches the mesh's buckets through
 * the runtime, as `mesh/<bucket>` states its manifest names: it reads the registrations and the
 * builds, and writes the puts, which the assigner's passes take further.
 *
 * A refusal is a coded tool error: a module that is not registered (REFUSED, naming the closest
 * one), a build it has not (NOT_FOUND, naming the closest build), a build that did not finish
 * (REFUSED), a name that is not one (INVALID_INPUT).
 */
import { ToolError, defineModule, defineTool, z, type ToolContext } from "@mesh/sdk";
import {
  Build,
  Bucket,
  Put,
  buildKey,
  checkName,
  meshRef,
  targetModuleKey,
  type Target,
} from "@mesh/protocol";
import { closest } from "@mesh/core";

/** The mesh's buckets the tools read and write: the assigner's manifest names them (parts.test.ts). */
export const PUT_TOOL_READS: readonly Bucket[] = [Bucket.modules, Bucket.builds];
export const PUT_TOOL_WRITES: readonly Bucket[] = [Bucket.puts];

/** Who a put is by when the caller does not say (`by` is the caller's word, for the record). */
const UNSAID = "a tool call";

const PutInput = z.object({
  module: z.string().describe("The module to pin"),
  build: z.string().describe("A build `mesh builds <module>` lists as built"),
  node: z.string().optional().describe("Only this node (default: every node)"),
  why: z.string().max(2000).optional().describe("Why, for the record"),
  by: z.string().min(1).max(200).optional().describe("Who asks, for the record"),
});

const UnputInput = z.object({
  module: z.string().describe("The module whose put is lifted"),
  node: z.string().optional().describe("The node's own put (default: the put on every node)"),
});

/** A name checked as the mesh checks it; INVALID_INPUT with the rule otherwise. */
function named(kind: "module" | "node" | "build", value: string): string {
  try {
    return checkName(kind, value);
  } catch (error) {
    throw new ToolError("INVALID_INPUT", (error as Error).message, { cause: error });
  }
}

function targetOf(node: string | undefined): Target {
  return node === undefined ? { all: true } : { node: named("node", node) };
}

/** REFUSED unless `module` is registered, naming the closest registered module. */
async function requireRegistered(ctx: ToolContext, module: string): Promise<void> {
  const known = (await ctx.state(meshRef(Bucket.modules)).keys()).sort();
  if (known.includes(module)) return;
  const guess = closest(module, known);
  throw new ToolError(
    "REFUSED",
    `no module ${JSON.stringify(module)}` +
      `${guess === undefined ? "" : ` — did you mean ${JSON.stringify(guess)}?`}` +
      ` (${known.length === 0 ? "none is registered" : `registered: ${known.join(", ")}`}); name a registered module (\`mesh module list\`)`,
  );
}

/** The build's record; NOT_FOUND naming the closest of the module's builds when it has none such. */
async function buildOf(ctx: ToolContext, module: string, build: string): Promise<Build> {
  const builds = ctx.state(meshRef(Bucket.builds));
  const record = await builds.get(buildKey(module, named("build", build)));
  if (record !== undefined) {
    const parsed = Build.safeParse(record);
    if (parsed.success) return parsed.data;
  }
  const known = (await builds.keys(`${module}.*`))
    .filter((k) => k.startsWith(`${module}.`))
    .map((k) => k.slice(module.length + 1))
    .sort();
  const guess = closest(build, known);
  throw new ToolError(
    "NOT_FOUND",
    `${module} has no build ${JSON.stringify(build)}` +
      `${guess === undefined ? "" : ` — did you mean ${JSON.stringify(guess)}?`}; see \`mesh builds ${module}\``,
  );
}

export const put = defineTool({
  name: "put",
  description:
    "Pin a module to one built build, on one node or every node, until unput lifts it; the assigner wants that build there meanwhile.",
  input: PutInput,
  output: z.object({ key: z.string(), put: z.string() }),
  handler: async (input, ctx) => {
    const module = named("module", input.module);
    const key = targetModuleKey(targetOf(input.node), module);
    await requireRegistered(ctx, module);
    const record = await buildOf(ctx, module, input.build);
    if (record.status !== "built") {
      throw new ToolError(
        "REFUSED",
        `${module} build ${record.build} is ${record.status}, and only a built build can be put; pick one \`mesh builds ${module}\` lists as built`,
      );
    }
    const value = Put.parse({
      build: record.build,
      by: input.by ?? UNSAID,
      why: input.why ?? "",
      at: new Date().toISOString(),
    });
    await ctx.state(meshRef(Bucket.puts)).put(key, value);
    return { key, put: record.build };
  },
});

export const unput = defineTool({
  name: "unput",
  description:
    "Lift a put: the newest build is wanted again, except where a failure marks it. Says whether a put stood, and the module's puts that still hold elsewhere.",
  input: UnputInput,
  output: z.object({ key: z.string(), lifted: z.boolean(), others: z.array(z.string()) }),
  handler: async (input, ctx) => {
    const module = named("module", input.module);
    const key = targetModuleKey(targetOf(input.node), module);
    const puts = ctx.state(meshRef(Bucket.puts));
    // Said as it is: a put that does not stand is not lifted, and puts elsewhere still hold. (The
    // runtime answers a key with no value as null, the SDK's fake as undefined.)
    const lifted = (await puts.get(key)) != null;
    if (lifted) await puts.delete(key);
    const others = (await puts.keys(`*.${module}`))
      .filter((k) => k !== key && k.endsWith(`.${module}`))
      .sort();
    return { key, lifted, others };
  },
});

/** What the runtime loads from the tools bundle. */
export default defineModule({ tools: [put, unput] });
