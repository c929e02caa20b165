/**
 * `mesh secret set|list|unset`: a module's secrets. The controller alone keeps them, sealed with
 * its vault's key in mesh-secrets, so each verb asks it (`mesh.controller.secret-*`); a value is
 * read from stdin and never printed back: `list` shows names, who set each and when. A module or
 * secret name the mesh does not know is refused with the known ones, unless `--force`.
 */
import type { Command } from "commander";
import type { MeshBus } from "@mesh/bus";
import { askSecretList, askSecretSet, askSecretUnset } from "@mesh/controller";
import { BROKER_SECRET, ErrorCode, MeshError, checkName } from "@mesh/protocol";
import { knownManifests, requireModule, unknownName } from "../../known.js";
import {
  act,
  answer,
  answerDone,
  connect,
  meshVerb,
  note,
  table,
  type ExitCode,
  type MeshOptions,
} from "../../verb.js";

export interface SecretOptions extends MeshOptions {
  readonly force?: boolean;
}

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
      .argument("<name>", "the secret's name, as in its own-secrets")
      .option(
        "--force",
        "set it although the module is not registered or its manifest does not declare the name",
      ),
    secretSet,
  );
  act(
    meshVerb(
      secret,
      "list",
      "A module's secrets: names, who set each and when; never values.",
    ).argument("<module>"),
    secretList,
  );
  act(
    meshVerb(
      secret,
      "unset",
      "Remove a module's secret from the vault; the controller sends it to no node again.",
    )
      .argument("<module>")
      .argument("<name>"),
    secretUnset,
  );
}

/**
 * The secret names `module`'s known manifests declare, or undefined when no manifest is known
 * yet (registered, not built): then a name cannot be checked.
 */
async function declaredSecrets(bus: MeshBus, module: string): Promise<string[] | undefined> {
  const manifests = await knownManifests(bus, module);
  if (manifests.length === 0) return undefined;
  return [...new Set(manifests.flatMap((m) => Object.keys(m["own-secrets"])))].sort();
}

export async function secretSet(
  module: string,
  name: string,
  options: SecretOptions,
): Promise<ExitCode> {
  checkName("module", module);
  const value = await readSecretFromStdin(process.stdin);
  await using bus = await connect(options);
  const done = await setSecret(bus, { module, name, value, force: options.force === true });
  for (const line of done.notes) note(options, line);
  return answerDone(options, done);
}

/**
 * `mesh secret set` on a bus: the value goes to the controller, which alone keeps secrets; what
 * comes back names it, never holds it. The view's page does the same.
 */
export async function setSecret(
  bus: MeshBus,
  input: { module: string; name: string; value: string; force?: boolean },
): Promise<{ message: string; notes: string[]; result: Record<string, unknown> }> {
  const { module, name, value, force } = input;
  checkName("module", module);
  const registered = await requireModule(bus, module, { force, forWhat: "keep the secret" });
  const declared = registered ? await declaredSecrets(bus, module) : undefined;
  if (declared !== undefined && !declared.includes(name) && force !== true) {
    throw unknownName({
      what: `secret of ${module}`,
      name,
      known: declared,
      knownAs: `declared in own-secrets of ${module}'s manifest`,
      fix: `set a declared secret, declare ${name} under own-secrets in ${module}'s manifest, or pass --force`,
      module,
    });
  }
  const set = await askSecretSet(bus, { module, name, value });
  const notes =
    declared !== undefined
      ? []
      : [
          registered
            ? `${module}'s manifest is not known yet (not built); the name ${name} is unchecked`
            : `${module} is not registered; the secret waits for it`,
        ];
  return {
    message: `${module}'s secret ${name} is set (${set.at}); nodes get it sealed`,
    notes,
    result: { ...set },
  };
}

export async function secretList(module: string, options: MeshOptions): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
  const listed = await askSecretList(bus, { module });
  const declared = await declaredSecrets(bus, module);
  const rows = listed.secrets.map((s) => ({
    ...s,
    declared: declared === undefined ? null : declared.includes(s.name),
  }));
  // The bus credential a module declares as `broker` is written by the mesh itself, never set.
  const byTheMesh = (declared ?? []).filter((d) => d === BROKER_SECRET);
  const missing = (declared ?? []).filter(
    (d) => d !== BROKER_SECRET && !rows.some((r) => r.name === d),
  );
  return answer(options, { module, secrets: rows, notSet: missing, byTheMesh }, () => [
    ...(rows.length === 0
      ? [`${module} has no secrets set`]
      : table(
          ["name", "set by", "at", ""],
          rows.map((r) => [r.name, r.by, r.at, r.declared === false ? "not declared" : ""]),
        )),
    ...missing.map((m) => `  ${m}: declared, not set — \`mesh secret set ${module} ${m} < file\``),
    ...byTheMesh.map(
      (m) => `  ${m}: the module's own bus credential, written by the mesh on each node`,
    ),
  ]);
}

export async function secretUnset(
  module: string,
  name: string,
  options: MeshOptions,
): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
  const done = await askSecretUnset(bus, { module, name });
  return answer(options, { ...done }, () => [
    done.removed
      ? `${module}'s secret ${name} is unset; the controller sends it to no node again`
      : `${module} has no secret ${name}; nothing to unset (see \`mesh secret list ${module}\`)`,
  ]);
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
