/** Wires the delivery verbs into the program (kept here so program.ts stays small). */
import { Option, type Command } from "commander";
import { runDeliveryDaemon, DELIVERY_DAEMONS } from "@mesh/delivery";
import { ErrorCode, MeshError } from "@mesh/protocol";
import {
  answerVerb,
  asksVerb,
  assignVerb,
  buildsVerb,
  differencesVerb,
  moduleAdd,
  moduleList,
  moduleShow,
  putVerb,
  wantsVerb,
  type ListOptions,
  type ModuleAddOptions,
  type PutOptions,
  type TargetOptions,
  type VerbOptions,
} from "./delivery.js";
import { retryVerb, type RetryOptions } from "./retry.js";

const ROOT_HELP = "where `mesh up` keeps the operator's credential (default ./.mesh)";
const CREDENTIAL_HELP = "a credential file to speak with (or set MESH_CREDENTIAL)";

/** The options every verb takes. */
function common(command: Command): Command {
  return command
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the result as JSON");
}

export function registerDeliveryVerbs(program: Command): void {
  const module = program.command("module").description("Register modules and look at them.");
  common(
    module
      .command("add")
      .description(
        "Register a module from a folder, <git url>#<ref>, or a .tar.gz; its manifest is checked at once.",
      )
      .argument("<source>", "a folder with mesh.yaml, <git url or path>#<ref>, or an archive")
      .option("--wait", "follow the build of this revision until it is built or failed")
      .addOption(
        new Option("--timeout <ms>", "how long --wait waits (default 600000)").argParser(positive),
      ),
  ).action(async (source: string, options: ModuleAddOptions) => {
    process.exitCode = await moduleAdd(source, options);
  });
  common(
    module.command("list").description("Every registered module with its latest build."),
  ).action(async (options: VerbOptions) => {
    process.exitCode = await moduleList(options);
  });
  common(
    module
      .command("show")
      .description("A module's source, candidates, builds and wants.")
      .argument("<module>"),
  ).action(async (name: string, options: VerbOptions) => {
    process.exitCode = await moduleShow(name, options);
  });

  common(
    program
      .command("builds")
      .description("Builds, with the log of each failed one.")
      .argument("[module]", "only this module's builds"),
  ).action(async (name: string | undefined, options: VerbOptions) => {
    process.exitCode = await buildsVerb(name, options);
  });

  for (const [verb, remove] of [
    ["assign", false],
    ["unassign", true],
  ] as const) {
    common(
      program
        .command(verb)
        .description(remove ? "Take a module's assignment away." : "Say where a module should run.")
        .argument("<module>")
        .option("--node <name>", "one node")
        .option("--all", "every node"),
    ).action(async (name: string, options: TargetOptions) => {
      process.exitCode = await assignVerb(name, options, remove);
    });
  }

  common(
    program
      .command("put")
      .description("Pin a module to one build (on one node, or everywhere) until `mesh unput`.")
      .argument("<module>")
      .argument("<build>")
      .option("--node <name>", "only this node (default: every node)")
      .option("--why <text>", "why, for the record"),
  ).action(async (name: string, build: string, options: PutOptions) => {
    process.exitCode = await putVerb(name, build, options);
  });
  common(
    program
      .command("unput")
      .description(
        "Lift a put: the newest build is wanted again, except where a failure marks it (see `mesh retry`).",
      )
      .argument("<module>")
      .option("--node <name>", "the node's own put (default: the put on every node)"),
  ).action(async (name: string, options: PutOptions) => {
    process.exitCode = await putVerb(name, undefined, options);
  });
  common(
    program
      .command("retry")
      .description(
        "Lift the failed marks of a module, so the newest build is wanted again where a failure set it back.",
      )
      .argument("<module>")
      .option("--node <name>", "only this node (default: every node)")
      .option("--why <text>", "why, for the record"),
  ).action(async (name: string, options: RetryOptions) => {
    process.exitCode = await retryVerb(name, options);
  });

  for (const [verb, run, what] of [
    ["wants", wantsVerb, "What each node should run, by which rule and why."],
    ["differences", differencesVerb, "Where want, composed and have differ, and why."],
  ] as const) {
    common(
      program
        .command(verb)
        .description(what)
        .option("--node <name>", "only this node")
        .option("--module <name>", "only this module"),
    ).action(async (options: ListOptions) => {
      process.exitCode = await run(options);
    });
  }
  common(
    program.command("asks").description("Questions that wait for an operator's answer."),
  ).action(async (options: VerbOptions) => {
    process.exitCode = await asksVerb(options);
  });
  common(
    program
      .command("answer")
      .description("Answer an ask yes or no.")
      .argument("<id>")
      .argument("<answer>", "yes or no"),
  ).action(async (id: string, answer: string, options: VerbOptions) => {
    process.exitCode = await answerVerb(id, answer, options);
  });

  // The daemons, as `mesh up` starts them: each runs until SIGTERM on its own credential.
  for (const daemon of DELIVERY_DAEMONS) {
    program
      .command(daemon)
      .description(`Run delivery's ${daemon} on its credential until SIGTERM (mesh up starts it).`)
      .requiredOption(
        "--credential <file>",
        `the ${daemon === "assigner" ? "assigner's" : "delivery"} credential`,
      )
      .addOption(
        new Option(
          "--puts-reopen-ms <ms>",
          "how often, at most, the assigner retries the puts bucket",
        )
          .argParser(positive)
          .hideHelp(),
      )
      .action(async (options: { credential: string; putsReopenMs?: number }) => {
        process.exitCode = await runDeliveryDaemon(daemon, {
          credential: options.credential,
          ...(options.putsReopenMs === undefined ? {} : { putsReopenMs: options.putsReopenMs }),
        });
      });
  }
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new MeshError(ErrorCode.USAGE, `${JSON.stringify(value)} is not a whole number above 0`);
  }
  return n;
}
