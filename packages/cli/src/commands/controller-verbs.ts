/**
 * Wires the verbs that speak to the controller or check what it would do: `mesh compose`,
 * `mesh manifest check`, `mesh join-token`, `mesh secret set`, and `mesh controller` (the
 * controller process itself, which `mesh up` starts). Kept here so program.ts stays small.
 */
import { Option, type Command } from "commander";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { askJoinToken, askSecretSet, runControllerDaemon, stopOnSignals } from "@mesh/controller";
import { connectToMesh, type FindMeshOptions } from "../find-mesh.js";
import { ExitCode, printJson } from "../output.js";
import { composeVerb, type ComposeOptions } from "./compose.js";
import { manifestCheckVerb, type ManifestCheckOptions } from "./manifest-check.js";

const ROOT_HELP = "where `mesh up` keeps the operator's credential (default ./.mesh)";
const CREDENTIAL_HELP = "a credential file to speak with (or set MESH_CREDENTIAL)";

export function registerControllerVerbs(program: Command): void {
  program
    .command("compose")
    .description("Print what the controller would send a node now, or every reason it is refused.")
    .requiredOption("--node <name>", "the node")
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print it as JSON")
    .action(async (options: ComposeOptions) => {
      process.exitCode = await composeVerb(options);
    });

  program
    .command("manifest")
    .description("Work with module manifests.")
    .command("check")
    .description(
      "Check a manifest (mesh.yaml / mesh.json, or a folder with one) and print every problem.",
    )
    .argument("<path>", "the manifest file, or the module's folder")
    .option("--json", "print the problems as JSON")
    .action(async (path: string, options: ManifestCheckOptions) => {
      process.exitCode = await manifestCheckVerb(path, options);
    });

  program
    .command("join-token")
    .description("Make a one-time token a new node joins the mesh with (mesh join).")
    .addOption(
      new Option("--ttl <seconds>", "how long it works (default 3600, at most a week)").argParser(
        parseTtl,
      ),
    )
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the token as JSON")
    .action(async (options: FindMeshOptions & { ttl?: number; json?: boolean }) => {
      await using bus = await connectToMesh(options);
      const made = await askJoinToken(
        bus,
        options.ttl === undefined ? {} : { ttlSeconds: options.ttl },
      );
      if (options.json === true) printJson({ ok: true, ...made });
      else {
        process.stdout.write(
          `${made.token}\n\nIt works once, until ${made.expiresAt}. On the new machine:\n` +
            `  mesh join ${bus.credential.servers[0] ?? "<bus-url>"} --token ${made.token} --node <name>\n`,
        );
      }
      process.exitCode = ExitCode.ok;
    });

  program
    .command("secret")
    .description("Work with module secrets (kept sealed by the controller's vault).")
    .command("set")
    .description(
      "Set a module's secret; the value is read from stdin, never from the command line.",
    )
    .argument("<module>", "the module that declares the secret")
    .argument("<name>", "the secret's name, as in its own-secrets")
    .option("--root <dir>", ROOT_HELP)
    .option("--credential <file>", CREDENTIAL_HELP)
    .option("--json", "print the outcome as JSON")
    .action(async (module: string, name: string, options: FindMeshOptions & { json?: boolean }) => {
      const value = await readSecretFromStdin(process.stdin);
      await using bus = await connectToMesh(options);
      const set = await askSecretSet(bus, { module, name, value });
      if (options.json === true) printJson({ ok: true, ...set });
      else
        process.stdout.write(
          `${module}'s secret ${name} is set (${set.at}); nodes get it sealed\n`,
        );
      process.exitCode = ExitCode.ok;
    });

  program
    .command("controller")
    .description("Run the controller for the mesh in --root (mesh up starts it); SIGTERM stops it.")
    .option("--root <dir>", "the mesh's root", "./.mesh")
    .option(
      "--credential <file>",
      "the controller's credential (default <root>/credentials/controller.json)",
    )
    .action(async (options: { root: string; credential?: string }) => {
      await runControllerDaemon({
        root: options.root,
        ...(options.credential === undefined ? {} : { credential: options.credential }),
        signal: stopOnSignals(),
      });
      process.exitCode = ExitCode.ok;
    });
}

/**
 * The secret's value: everything on stdin, without one trailing newline (what `echo` and a
 * terminal add). A terminal is refused: the value would be echoed and kept in scrollback.
 */
export async function readSecretFromStdin(stdin: NodeJS.ReadStream): Promise<string> {
  if (stdin.isTTY === true) {
    throw new MeshError(
      ErrorCode.USAGE,
      "mesh secret set reads the value from stdin, and stdin is a terminal; pipe it in, e.g. `mesh secret set hello api-token < token.txt`",
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  const value = Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
  if (value === "") {
    throw new MeshError(
      ErrorCode.USAGE,
      "mesh secret set read an empty value from stdin; pipe the secret in",
    );
  }
  return value;
}

function parseTtl(value: string): number {
  const seconds = Number(value);
  if (!Number.isSafeInteger(seconds) || seconds <= 0 || seconds > 7 * 24 * 3600) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--ttl ${JSON.stringify(value)} is not a number of seconds from 1 to 604800 (a week); e.g. 3600`,
    );
  }
  return seconds;
}
