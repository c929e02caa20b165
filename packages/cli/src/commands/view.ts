/**
 * `mesh view [--root DIR] [--port N]`: the operator's web page, served on loopback with the
 * operator's credential until Ctrl-C. Listening beyond loopback takes `--host` and `--expose`,
 * and then a token (`--token`, `MESH_VIEW_TOKEN`, or one made up and printed in the URL).
 */
import { userInfo } from "node:os";
import { aborted, stopOnSignals } from "@mesh/kit";
import { Option, type Command } from "commander";
import { newViewToken, startView } from "@mesh/view";
import { connectToMesh, type FindMeshOptions } from "../find-mesh.js";
import { ExitCode, printJson } from "../output.js";
import { act, meshOptions, portNumber } from "../verb.js";
import { viewActions } from "./view-actions.js";

export interface ViewCliOptions extends FindMeshOptions {
  readonly host?: string;
  readonly port?: number;
  readonly expose?: boolean;
  readonly token?: string;
  readonly json?: boolean;
  /** Start, print the URL, and stop again (for scripts and tests). */
  readonly exitWhenReady?: boolean;
}

/** The environment variable that can carry the token, so it stays out of `ps`. */
export const VIEW_TOKEN_ENV = "MESH_VIEW_TOKEN";

export async function view(options: ViewCliOptions): Promise<ExitCode> {
  using stopping = stopOnSignals({ name: "mesh view", log: () => undefined });
  await using bus = await connectToMesh({ ...options, signal: stopping.signal });
  const fromEnv = process.env[VIEW_TOKEN_ENV];
  const token =
    options.token ??
    (fromEnv === undefined || fromEnv === "" ? undefined : fromEnv) ??
    (options.expose === true ? newViewToken() : undefined);
  await using page = await startView({
    bus,
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.expose === undefined ? {} : { expose: options.expose }),
    ...(token === undefined ? {} : { token }),
    actor: `${safeUser()} (view)`,
    actions: viewActions,
    onProblem: (what, error) =>
      process.stderr.write(`mesh view: ${what}: ${(error as Error).message}\n`),
  });
  if (options.json === true) printJson({ ok: true, url: page.url });
  else {
    process.stdout.write(`The view is at ${page.url}\n`);
    if (options.exitWhenReady !== true) process.stdout.write("Press Ctrl-C to stop.\n");
  }
  if (options.exitWhenReady !== true) {
    await Promise.race([aborted(stopping.signal), bus.closed()]);
  }
  return ExitCode.ok;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "operator";
  }
}

export function registerViewVerb(program: Command): void {
  act(
    meshOptions(
      program
        .command("view")
        .description("Serve the mesh's live web page on this machine (loopback) until Ctrl-C.")
        .addOption(
          new Option("--port <port>", "the page's port (default: any free one)").argParser(
            portNumber("--port", true),
          ),
        )
        .option(
          "--host <address>",
          "where to listen (default 127.0.0.1); beyond loopback needs --expose",
        )
        .option("--expose", "allow a --host beyond loopback; every request then needs the token")
        .option(
          "--token <secret>",
          `the token requests must carry (or set ${VIEW_TOKEN_ENV}; made up when --expose has none)`,
        )
        .option("--exit-when-ready", "stop again as soon as the page is served (for scripts)"),
      "print the URL as JSON",
    ),
    view,
  );
}
