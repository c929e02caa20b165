/**
 * `mesh context [--principal operator]`: writes a `nats` CLI context for one of this mesh's
 * credentials, so the standard tooling works as on any NATS system: `nats --context mesh-<node>
 * kv ls`, `stream ls`, `micro ls`, `req`. The context holds the user and password (mode 0600),
 * the bus urls, the bus's certificate when it is pinned, and the inbox prefix of every credential
 * but the operator's (the operator speaks with the default inbox, decision 0070). In accounts
 * mode (decision 0080) it names a `.creds` file beside it (the user JWT and nkey seed, 0600)
 * instead of a user and password.
 */
import { mkdir } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { formatCreds } from "@mesh/bus/server";
import { writeFileAtomic } from "@mesh/kit";
import { credentialInbox, readCredential } from "@mesh/bus";
import { ErrorCode, MeshError, Principal, checkName, type Credential } from "@mesh/protocol";
import { credentialFileFor, rootOf, type FindMeshOptions } from "../../find-mesh.js";
import { credentialPath, rootPaths } from "../../mesh-root.js";
import { ExitCode, printJson } from "../../output.js";

export interface ContextOptions extends FindMeshOptions {
  readonly principal?: string;
  readonly name?: string;
  /** The `nats` CLI's context folder; `$XDG_CONFIG_HOME/nats/context` by default. */
  readonly dir?: string;
  readonly json?: boolean;
}

/** What the `nats` CLI reads from `<context dir>/<name>.json` (natscli's context fields). */
export interface NatsContext {
  readonly description: string;
  readonly url: string;
  readonly user?: string;
  readonly password?: string;
  /** Accounts mode: the `.creds` file (user JWT and nkey seed). */
  readonly creds?: string;
  readonly ca?: string;
  readonly inbox_prefix?: string;
}

export function natsContextDir(env: NodeJS.ProcessEnv = process.env): string {
  const config = env["XDG_CONFIG_HOME"];
  return join(
    config === undefined || config === "" ? join(homedir(), ".config") : config,
    "nats",
    "context",
  );
}

/** The context for a credential; `caFile` when the credential pins the bus's certificate. */
export function natsContextOf(
  credential: Credential,
  caFile?: string,
  credsFile?: string,
): NatsContext {
  const inbox = credentialInbox(credential);
  return {
    description: `mesh: ${credential.module} on ${credential.node} (written by mesh context)`,
    url: credential.servers.join(","),
    ...(credsFile === undefined
      ? { user: credential.user, password: credential.password ?? "" }
      : { creds: credsFile }),
    ...(caFile === undefined ? {} : { ca: caFile }),
    ...(inbox === undefined ? {} : { inbox_prefix: inbox }),
  };
}

export async function context(options: ContextOptions): Promise<ExitCode> {
  const principal = checkName("module", options.principal ?? Principal.operator);
  const file =
    principal === Principal.operator
      ? credentialFileFor(options)
      : credentialPath(rootPaths(rootOf(options)), principal);
  const credential = await readCredential(file);
  if (credential.module !== principal) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${file} is ${credential.module}'s credential, not ${principal}'s; name the principal it is (--principal ${credential.module}) or another file`,
    );
  }
  const name = checkName(
    "module",
    options.name ??
      `mesh-${credential.node}${principal === Principal.operator ? "" : `-${principal}`}`,
  );
  const dir = options.dir ?? natsContextDir();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let caFile: string | undefined;
  if (credential.ca !== undefined) {
    caFile = join(dir, `${name}.ca.pem`);
    await writePrivate(caFile, credential.ca);
  }
  let credsFile: string | undefined;
  if (credential.jwt !== undefined && credential.seed !== undefined) {
    credsFile = join(dir, `${name}.creds`);
    await writePrivate(credsFile, formatCreds(credential.jwt, credential.seed));
  }
  const path = join(dir, `${name}.json`);
  await writePrivate(
    path,
    `${JSON.stringify(natsContextOf(credential, caFile, credsFile), null, 2)}\n`,
  );
  if (options.json === true) {
    printJson({ ok: true, name, path, principal, url: credential.servers.join(",") });
  } else {
    process.stdout.write(
      [
        `wrote the nats context ${name} (${path}, mode 0600; it holds ${principal}'s ${credsFile === undefined ? "password" : "signed user, in " + credsFile})`,
        "Try:",
        `  nats --context ${name} kv ls`,
        `  nats --context ${name} micro ls`,
        `  nats context select ${name}    # make it the default`,
        "",
      ].join("\n"),
    );
  }
  return ExitCode.ok;
}

async function writePrivate(path: string, text: string): Promise<void> {
  await writeFileAtomic(path, text, { mode: 0o600 });
}

export function registerContextVerb(program: Command): void {
  program
    .command("context")
    .description("Write a `nats` CLI context for this mesh, so nats kv/stream/micro/req work.")
    .option("--principal <name>", "whose credential: operator (default) or mcp")
    .option("--name <name>", "the context's name (default mesh-<node>)")
    .option("--dir <dir>", "the nats context folder (default $XDG_CONFIG_HOME/nats/context)")
    .option("--root <dir>", "where `mesh up` keeps the credentials (default ./.mesh)")
    .option("--credential <file>", "the operator's credential file (or set MESH_CREDENTIAL)")
    .option("--json", "print what was written as JSON")
    .action(async (options: ContextOptions) => {
      process.exitCode = await context(options);
    });
}
