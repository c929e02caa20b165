/**
 * The mesh's own processes as verbs, the way `mesh up` starts them: `mesh controller` and
 * delivery's `mesh indexer|builder|assigner`, each on its own credential until SIGTERM.
 */
import { Option, type Command } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { runControllerProcess } from "@mesh/controller";
import {
  DELIVERY_DAEMONS,
  SHIPPED_LANGUAGES,
  runBuildModule,
  runDeliveryDaemon,
} from "@mesh/delivery";
import type { ExitCode } from "../../output.js";
import { rootOf } from "../../find-mesh.js";
import { MAX_TIMER_MS, act, positiveNumber } from "../../verb.js";

export function registerDaemonVerbs(program: Command): void {
  act(
    program
      .command("controller")
      .description(
        "Run the controller for the mesh in --root (mesh up starts it); SIGTERM stops it.",
      )
      .option("--root <dir>", "the mesh's root (or MESH_ROOT)", rootOf({}))
      .option(
        "--credential <file>",
        "the controller's credential (default <root>/credentials/controller.json)",
      )
      .option(
        "--shared-login",
        "the bus is not the mesh's own (mesh up --bus): write no users list, issue the controller's login",
      )
      .addOption(
        new Option(
          "--join-revocations-every-ms <ms>",
          "how often, at most, spent join users' revocations get an account update (default 60000)",
        )
          .argParser(positiveNumber("--join-revocations-every-ms", "60000", MAX_TIMER_MS))
          .hideHelp(),
      )
      .addOption(
        new Option(
          "--credential-lifetime-ms <ms>",
          "how long a host's, runtime's or module's credential lives; renewed with a third left (default 21600000: 6 hours)",
        ).argParser(positiveNumber("--credential-lifetime-ms", "21600000", MAX_TIMER_MS)),
      ),
    async (options: {
      root: string;
      credential?: string;
      sharedLogin?: boolean;
      joinRevocationsEveryMs?: number;
      credentialLifetimeMs?: number;
    }) => {
      return (await runControllerProcess({
        root: options.root,
        ...(options.credentialLifetimeMs === undefined
          ? {}
          : { credentialLifetimeMs: options.credentialLifetimeMs }),
        ...(options.joinRevocationsEveryMs === undefined
          ? {}
          : { joinRevocationsEveryMs: options.joinRevocationsEveryMs }),
        ...(options.sharedLogin === true ? { sharedLogin: true } : {}),
        ...(options.credential === undefined ? {} : { credential: options.credential }),
      })) as ExitCode;
    },
  );

  for (const daemon of DELIVERY_DAEMONS) {
    act(
      program
        .command(daemon)
        .description(
          `Run delivery's ${daemon} on its credential until SIGTERM (mesh up starts it).`,
        )
        .requiredOption(
          "--credential <file>",
          `the ${daemon === "assigner" ? "assigner's" : "delivery"} credential`,
        )
        .addOption(
          new Option(
            "--puts-reopen-ms <ms>",
            "how often, at most, the assigner retries the puts bucket",
          )
            .argParser(positiveNumber("--puts-reopen-ms", "1000", MAX_TIMER_MS))
            .hideHelp(),
        ),
      (options: { credential: string; putsReopenMs?: number }) =>
        runDeliveryDaemon(daemon, {
          credential: options.credential,
          ...(options.putsReopenMs === undefined ? {} : { putsReopenMs: options.putsReopenMs }),
        }) as Promise<ExitCode>,
    );
  }
  registerBuildModuleVerb(program);
}

/** `mesh build-module <language>`: one language's build module (decision 0160). */
function registerBuildModuleVerb(program: Command): void {
  act(
    program
      .command("build-module")
      .argument("<language>", `the language it builds: ${SHIPPED_LANGUAGES.join(", ")}`)
      .description(
        "Run the build module of a language on its credential until SIGTERM (mesh up starts one per language).",
      )
      .requiredOption("--credential <file>", "the build modules' credential (principal build)"),
    (language: string, options: { credential: string }) => {
      // Refused here, coded, before any connection: the fuzz test holds every refusal to a code.
      if (!SHIPPED_LANGUAGES.includes(language)) {
        throw new MeshError(
          ErrorCode.USAGE,
          `mesh ships build modules for ${SHIPPED_LANGUAGES.join(", ")}, not for ${JSON.stringify(language)}; run mesh build-module <${SHIPPED_LANGUAGES.join("|")}>`,
        );
      }
      return runBuildModule(language, { credential: options.credential }) as Promise<ExitCode>;
    },
  );
}
