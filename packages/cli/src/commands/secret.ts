/**
 * `mesh secret set <module> <name>`: a module's secret, read from stdin and handed to the
 * controller, which keeps it sealed in its vault (mesh-secrets); nodes get it sealed to them.
 */
import type { Command } from "commander";
import { askSecretSet } from "@mesh/controller";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { act, connect, meshVerb, out, printJson, ExitCode, type MeshOptions } from "../verb.js";

export function registerSecretVerbs(program: Command): void {
  const secret = program
    .command("secret")
    .description("Work with module secrets (kept sealed by the controller's vault).");
  act(
    meshVerb(
      secret,
      "set",
      "Set a module's secret; the value is read from stdin, never from the command line.",
    )
      .argument("<module>", "the module that declares the secret")
      .argument("<name>", "the secret's name, as in its own-secrets"),
    secretSet,
  );
}

export async function secretSet(
  module: string,
  name: string,
  options: MeshOptions,
): Promise<ExitCode> {
  const value = await readSecretFromStdin(process.stdin);
  await using bus = await connect(options);
  const set = await askSecretSet(bus, { module, name, value });
  if (options.json === true) printJson({ ok: true, ...set });
  else out(`${module}'s secret ${name} is set (${set.at}); nodes get it sealed`);
  return ExitCode.ok;
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
