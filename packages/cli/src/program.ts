/**
 * The verbs of `mesh`: each group registers itself beside its implementation in `commands/<group>/`
 * (with the kit in verb.ts: `--root/--credential/--json`, output and exit codes), and this list
 * is the whole program. Errors are reported here, once, the way the verb was asked to speak
 * (`--json` or plain).
 */
import { Command, CommanderError } from "commander";
import { MESH_VERSION } from "@mesh/protocol";
import { registerAssignVerbs } from "./commands/module/assign.js";
import { registerCallVerb } from "./commands/tools/call.js";
import { registerComposeVerb } from "./commands/module/compose.js";
import { registerConditionVerbs } from "./commands/status/conditions.js";
import { registerConfigVerbs } from "./commands/config/config.js";
import { registerDaemonVerbs } from "./commands/node/daemons.js";
import { registerDecisionVerbs } from "./commands/module/decisions.js";
import { registerHostVerb } from "./commands/node/host.js";
import { registerInitVerb } from "./commands/init/init.js";
import { registerJoinVerbs } from "./commands/node/join.js";
import { registerLogVerbs } from "./commands/module/logs.js";
import { registerManifestVerbs } from "./commands/module/manifest-check.js";
import { registerModuleVerbs } from "./commands/module/module.js";
import { registerRetryVerb } from "./commands/module/retry.js";
import { registerRolloutVerbs } from "./commands/rollout/rollout.js";
import { registerSecretVerbs } from "./commands/secret/secret.js";
import { registerStatusVerb } from "./commands/status/status.js";
import { registerToolsVerb } from "./commands/tools/tools.js";
import { registerUpVerb } from "./commands/up/up.js";
import { registerUpgradeVerb } from "./commands/upgrade/upgrade.js";
import { registerViewVerb } from "./commands/view/view.js";
import { registerMcpVerb } from "./commands/mcp/mcp.js";
import { registerContextVerb } from "./commands/shell/context.js";
import { registerCompletionVerb } from "./commands/shell/completion.js";
import { ExitCode, reportError } from "./output.js";

/** Every verb group, in the order `mesh help` lists them. */
const VERB_GROUPS: ReadonlyArray<(program: Command) => void> = [
  registerUpVerb,
  registerStatusVerb,
  registerInitVerb,
  registerModuleVerbs,
  registerAssignVerbs,
  registerRetryVerb,
  registerRolloutVerbs,
  registerUpgradeVerb,
  registerDecisionVerbs,
  registerConfigVerbs,
  registerSecretVerbs,
  registerLogVerbs,
  registerConditionVerbs,
  registerToolsVerb,
  registerCallVerb,
  registerViewVerb,
  registerComposeVerb,
  registerManifestVerbs,
  registerJoinVerbs,
  registerHostVerb,
  registerDaemonVerbs,
  registerMcpVerb,
  registerContextVerb,
  registerCompletionVerb,
];

export function buildProgram(): Command {
  const program = new Command("mesh")
    .description("Runs software on a fleet of machines over NATS.")
    .version(MESH_VERSION, "--version")
    .showHelpAfterError("(run `mesh help` for every verb)")
    // A verb's options belong to it: `mesh conditions resolve a b --json` is resolve's --json.
    .enablePositionalOptions()
    .exitOverride();
  for (const register of VERB_GROUPS) register(program);
  return program;
}

/** The options every mesh verb takes, by how many values follow them. */
const VERB_OPTIONS = new Map([
  ["--root", 1],
  ["--credential", 1],
  ["--json", 0],
]);

/**
 * `mesh --root D status` as `mesh status --root D`: the options every verb takes are accepted
 * before the verb too (where `git -C` and `nats --context` put theirs), and moved after it,
 * before a `--` if there is one.
 */
export function verbOptionsAfterVerb(argv: readonly string[]): string[] {
  const [node = "", script = "", ...rest] = argv;
  const moved: string[] = [];
  for (;;) {
    const arg = rest[0];
    const takes = arg === undefined ? undefined : VERB_OPTIONS.get(arg.split("=", 1)[0] ?? "");
    if (arg === undefined || takes === undefined) break;
    moved.push(...rest.splice(0, takes === 1 && !arg.includes("=") ? 2 : 1));
  }
  if (moved.length === 0) return [...argv];
  const end = rest.indexOf("--");
  rest.splice(end < 0 ? rest.length : end, 0, ...moved);
  return [node, script, ...rest];
}

/** Runs the command line and returns the exit code. */
export async function runCli(given: readonly string[]): Promise<number> {
  const program = buildProgram();
  const argv = verbOptionsAfterVerb(given);
  const json = argv.includes("--json");
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; commander has already printed what was wrong otherwise.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, json);
  }
}
