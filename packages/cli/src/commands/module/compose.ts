/**
 * `mesh compose --node N [--json]`: what the controller would send a node now — its resources
 * (needs unsealed: only the controller seals), each module's provision data and the bus users the
 * composition implies — or every reason it is refused, each with its fix. Computed from the bus's
 * current wants, manifests and presence with the controller's own planning (core's compose).
 */
import type { Command } from "commander";
import { previewComposition } from "@mesh/controller";
import { connectToMesh, type FindMeshOptions } from "../../find-mesh.js";
import { ExitCode, printJson } from "../../output.js";
import { act, meshOptions } from "../../verb.js";

export interface ComposeOptions extends FindMeshOptions {
  readonly node: string;
  readonly json?: boolean;
}

export async function composeVerb(options: ComposeOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const plan = await previewComposition(bus, { node: options.node });
  if (!plan.ok) {
    if (options.json === true) {
      printJson({
        ok: false,
        node: plan.node,
        code: "COMPOSITION_REFUSED",
        refusals: plan.refusals,
      });
    } else {
      const lines = [
        `${plan.node} cannot be composed (${plan.refusals.length} reason(s)); what it runs stays as it is until each is fixed:`,
        ...plan.refusals.map(
          (r) =>
            `  - ${r.reason}\n    fix: ${r.fix} [${r.code}${r.module === undefined ? "" : `, ${r.module}`}]`,
        ),
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
    }
    return ExitCode.refused;
  }
  if (options.json === true) {
    printJson({
      ok: true,
      node: plan.node,
      resources: plan.resources,
      modules: plan.modules,
      users: plan.principals.map((p) => ({ user: p.user, permissions: p.permissions })),
      leftOut: plan.leftOut,
      grantProblems: plan.grantProblems,
    });
    return ExitCode.ok;
  }
  const lines = [`${plan.node}: ${plan.resources.length} resource(s)`];
  for (const r of plan.resources) {
    const what =
      r.type === "archive"
        ? `${r.source} -> ${r.path}`
        : r.type === "process"
          ? `${r.run.join(" ")} (in ${r.path}${r.user === undefined ? "" : `, as ${r.user}`})`
          : r.type === "host"
            ? `${r.source}, node ${r.entry} (the node's host build, handed over to)`
            : `${r.kind} file ${r.path} (sealed to the node by the controller)`;
    lines.push(`  ${r.type.padEnd(7)} ${r.id}  ${what}`);
  }
  for (const l of plan.leftOut) lines.push(`  left out: ${l.module}: ${l.reason}`);
  for (const p of plan.principals) lines.push(`  bus user: ${p.user}`);
  for (const p of plan.grantProblems) lines.push(`  not granted: ${p.message}`);
  process.stdout.write(`${lines.join("\n")}\n`);
  return ExitCode.ok;
}

export function registerComposeVerb(program: Command): void {
  act(
    meshOptions(
      program
        .command("compose")
        .description(
          "Print what the controller would send a node now, or every reason it is refused.",
        )
        .requiredOption("--node <name>", "the node"),
      "print it as JSON",
    ),
    composeVerb,
  );
}
