/**
 * Wires the verbs an operator runs a mesh with day to day: `mesh status`, `mesh config
 * set|get|unset`, `mesh logs`, `mesh conditions` and `mesh join` (kept here so program.ts stays
 * small).
 */
import { Option, type Command } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { configGet, configSet, configUnset, type ConfigOptions } from "./config.js";
import type { VerbOptions } from "./delivery.js";
import { leaveWhenDone } from "./host.js";
import { joinVerb, type JoinCliOptions } from "./join.js";
import { conditionsVerb, logsVerb, type ConditionsOptions, type LogsOptions } from "./logs.js";
import { statusVerb } from "./status.js";

const ROOT_HELP = "where `mesh up` keeps the operator's credential (default ./.mesh)";
const CREDENTIAL_HELP = "a credential file to speak with (or set MESH_CREDENTIAL)";

function common(command: Command): Command {
  return command
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the result as JSON");
}

export function registerOperateVerbs(program: Command): void {
  common(
    program
      .command("status")
      .description(
        "The mesh at a glance: nodes, modules × nodes (want, have, health), differences, open asks, recent conditions.",
      ),
  ).action(async (options: VerbOptions) => {
    process.exitCode = await statusVerb(options);
  });

  const config = program
    .command("config")
    .description("A module's config values, mesh-wide or for one node.");
  common(
    config
      .command("set")
      .description(
        "Set a config value. The value is JSON (42, true, '\"Hi\"', '{\"a\":1}'); text that is not valid JSON is kept as a string, so `mesh config set hello greeting Hi` works.",
      )
      .argument("<module>")
      .argument("<key>", "a key the module's manifest declares")
      .argument("<value>", "JSON, or plain text taken as a string")
      .option("--node <name>", "for this node only (default: mesh-wide)")
      .option("--force", "set a key the module's manifest does not declare"),
  ).action(async (module: string, key: string, value: string, options: ConfigOptions) => {
    process.exitCode = await configSet(module, key, value, options);
  });
  common(
    config
      .command("get")
      .description(
        "Show a module's config: declared keys with their defaults (once its manifest is known), the mesh-wide and per-node values.",
      )
      .argument("<module>")
      .argument("[key]", "only this key")
      .option("--node <name>", "only this node's own values"),
  ).action(async (module: string, key: string | undefined, options: ConfigOptions) => {
    process.exitCode = await configGet(module, key, options);
  });
  common(
    config
      .command("unset")
      .description("Remove a config value: the mesh-wide value or default applies again.")
      .argument("<module>")
      .argument("<key>")
      .option("--node <name>", "the node's own value (default: the mesh-wide one)"),
  ).action(async (module: string, key: string, options: ConfigOptions) => {
    process.exitCode = await configUnset(module, key, options);
  });

  common(
    program
      .command("logs")
      .description(
        "A module's process output: the last lines, then with --follow each new one until Ctrl-C. With --json --follow, one JSON object per line.",
      )
      .argument("<module>")
      .option("--node <name>", "only this node")
      .option("--follow", "keep printing new lines until Ctrl-C")
      .addOption(
        new Option(
          "--lines <n>",
          "how many of the kept lines to show first (default 50)",
        ).argParser(wholeNumber),
      ),
  ).action(async (module: string, options: LogsOptions) => {
    process.exitCode = await logsVerb(module, options);
  });

  common(
    program
      .command("conditions")
      .description("What modules said (the last condition per module and name), newest first.")
      .option("--module <name>", "only this module"),
  ).action(async (options: ConditionsOptions) => {
    process.exitCode = await conditionsVerb(options);
  });

  program
    .command("join")
    .description(
      "Make this machine (or another root on it) a node of a mesh, then run its host until Ctrl-C.",
    )
    .argument(
      "<bus-url>",
      "the mesh's bus, e.g. nats://10.0.0.5:4222 (as `mesh join-token` prints)",
    )
    .option("--token <token>", "a one-time token from `mesh join-token` (not needed once joined)")
    .requiredOption("--node <name>", "this node's name")
    .requiredOption("--root <dir>", "where this node keeps its key, credential, bundles and state")
    .option(
      "--credential-out <file>",
      "where to write the host credential (default <root>/credentials/host.json)",
    )
    .option("--no-run", "only join: print the credential's path and exit")
    .option(
      "--stop-processes-on-exit",
      "stop the node's processes when its host stops (by default they keep running, for the next host to adopt)",
    )
    .option("--json", "print the outcome as JSON")
    .action(async (busUrl: string, options: JoinCliOptions) => {
      process.exitCode = await joinVerb(busUrl, options);
      if (options.run !== false) leaveWhenDone(process.exitCode);
    });
}

function wholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--lines ${JSON.stringify(value)} is not a whole number; e.g. --lines 100`,
    );
  }
  return n;
}
