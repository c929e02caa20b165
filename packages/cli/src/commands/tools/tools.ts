/**
 * `mesh tools [--node N] [--module M] [--json]`: every tool served in the mesh, found through
 * `$SRV` discovery: a readable signature per tool (name, arguments with their types, output) and
 * its description; the JSON Schemas with `--json`.
 */
import type { Command } from "commander";
import { discoverTools, type DiscoveredTool } from "@mesh/bus";
import { connectToMesh, type FindMeshOptions } from "../../find-mesh.js";
import { ExitCode, printJson } from "../../output.js";
import { act, meshOptions } from "../../verb.js";
import { argumentNotes, toolSignature } from "./tool-signature.js";

export interface ToolsOptions extends FindMeshOptions {
  readonly node?: string;
  readonly module?: string;
  readonly json?: boolean;
}

/** Every discovered tool, narrowed to a node and a module when given. */
export async function listTools(options: ToolsOptions): Promise<DiscoveredTool[]> {
  await using bus = await connectToMesh(options);
  const tools = await discoverTools(bus);
  return tools.filter(
    (t) =>
      (options.node === undefined || t.node === options.node) &&
      (options.module === undefined || t.module === options.module),
  );
}

export async function tools(options: ToolsOptions): Promise<ExitCode> {
  const found = await listTools(options);
  if (options.json === true) {
    // At most NODES_SHOWN nodes of each tool, each entry saying how many serve it: the answer's
    // size follows the tools, not the fleet (`--node` names the one wanted).
    const counts = new Map<string, number>();
    for (const t of found)
      counts.set(`${t.module}/${t.tool}`, (counts.get(`${t.module}/${t.tool}`) ?? 0) + 1);
    const listed = new Map<string, number>();
    const shown = found.filter((t) => {
      const key = `${t.module}/${t.tool}`;
      listed.set(key, (listed.get(key) ?? 0) + 1);
      return (listed.get(key) ?? 0) <= NODES_SHOWN;
    });
    printJson({
      ok: true,
      tools: shown.map((t) => ({
        node: t.node,
        module: t.module,
        tool: t.tool,
        subject: t.subject,
        description: t.description,
        input: t.input ?? null,
        output: t.output ?? null,
        ...(t.problems.length === 0 ? {} : { problems: t.problems }),
        nodeCount: counts.get(`${t.module}/${t.tool}`) ?? 0,
      })),
    });
    return ExitCode.ok;
  }
  if (found.length === 0) {
    process.stdout.write(
      "no tools are served" +
        (options.module === undefined ? "" : ` by ${options.module}`) +
        (options.node === undefined ? "" : ` on ${options.node}`) +
        "; a module's tools are served where node-tools runs and the module is assigned\n",
    );
    return ExitCode.ok;
  }
  // One signature per tool, however many nodes serve it; the schemas themselves are in --json.
  const byTool = new Map<string, { tool: DiscoveredTool; nodes: string[] }>();
  for (const t of found) {
    const key = `${t.module}/${t.tool}\0${toolSignature(t)}\0${t.description}`;
    const entry = byTool.get(key) ?? { tool: t, nodes: [] };
    entry.nodes.push(t.node);
    byTool.set(key, entry);
  }
  for (const { tool: t, nodes } of byTool.values()) {
    process.stdout.write(`${toolSignature(t)}  on ${nodesLine(nodes, t.module)}\n`);
    if (t.description !== "") process.stdout.write(`  ${t.description}\n`);
    for (const note of argumentNotes(t.input)) process.stdout.write(`    ${note}\n`);
    for (const problem of t.problems) process.stdout.write(`  problem: ${problem}\n`);
  }
  return ExitCode.ok;
}

/** How many node names a tool's line shows; a fleet's worth is said as a number. */
const NODES_SHOWN = 10;

function nodesLine(nodes: string[], module: string): string {
  nodes.sort();
  if (nodes.length <= NODES_SHOWN) return nodes.join(", ");
  return `${nodes.slice(0, NODES_SHOWN).join(", ")} and ${nodes.length - NODES_SHOWN} more (${nodes.length} nodes; \`mesh tools --module ${module} --node NAME\` for one)`;
}

export function registerToolsVerb(program: Command): void {
  act(
    meshOptions(
      program
        .command("tools")
        .description(
          "List every tool served in the mesh: a signature per tool (arguments with their types, output) and its description; the JSON Schemas with --json.",
        )
        .option("--node <name>", "only the tools served on this node")
        .option("--module <name>", "only this module's tools"),
      "print the tools as JSON",
    ),
    tools,
  );
}
