/**
 * `mesh tools [--node N] [--module M] [--json]`: every tool served in the mesh, found through
 * `$SRV` discovery: a readable signature per tool (name, arguments with their types, output) and
 * its description; the JSON Schemas with `--json`.
 */
import type { Command } from "commander";
import { discoverTools, type DiscoveredTool } from "@mesh/bus";
import { connectToMesh, type FindMeshOptions } from "../find-mesh.js";
import { ExitCode, printJson } from "../output.js";
import { act, meshOptions } from "../verb.js";
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
    printJson({
      ok: true,
      tools: found.map((t) => ({
        node: t.node,
        module: t.module,
        tool: t.tool,
        subject: t.subject,
        description: t.description,
        input: t.input ?? null,
        output: t.output ?? null,
        ...(t.problems.length === 0 ? {} : { problems: t.problems }),
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
    process.stdout.write(`${toolSignature(t)}  on ${nodes.sort().join(", ")}\n`);
    if (t.description !== "") process.stdout.write(`  ${t.description}\n`);
    for (const note of argumentNotes(t.input)) process.stdout.write(`    ${note}\n`);
    for (const problem of t.problems) process.stdout.write(`  problem: ${problem}\n`);
  }
  return ExitCode.ok;
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
