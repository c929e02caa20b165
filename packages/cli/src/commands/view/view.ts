/**
 * `mesh view [--root DIR] [--port N]`: the operator's web page, served on loopback with the
 * operator's credential until Ctrl-C. Listening beyond loopback takes `--listen ADDR` (HTTPS with
 * the mesh's certificate, a login per operator, actions as the view's own principals; decisions
 * 0170, 0171), or the older `--host` with `--expose` and a token. `mesh view-token` makes another
 * login link for a view that listens.
 */
import { userInfo } from "node:os";
import { aborted, stopOnSignals, writeFileAtomic } from "@mesh/kit";
import type { MeshBus } from "@mesh/bus";
import { Option, type Command } from "commander";
import { ViewLogins, loginToken, newViewToken, startView, type Access } from "@mesh/view";
import { parseListen } from "../../up/bus-listen.js";
import { connectToMesh, rootOf, type FindMeshOptions } from "../../find-mesh.js";
import { readJson, rootPaths } from "../../mesh-root.js";
import { ExitCode, printJson } from "../../output.js";
import { act, meshOptions, portNumber, positiveNumber } from "../../verb.js";
import { viewActions } from "./view-actions.js";
import { connectAsView, listeningFile, loginKey, viewCertificate } from "./view-listen.js";

export interface ViewCliOptions extends FindMeshOptions {
  readonly host?: string;
  readonly port?: number;
  readonly expose?: boolean;
  readonly token?: string;
  /** Serve HTTPS at this address with logins (decision 0170). */
  readonly listen?: string;
  /** With --listen: every session reads only. */
  readonly readOnly?: boolean;
  readonly json?: boolean;
  /** Start, print the URL, and stop again (for scripts and tests). */
  readonly exitWhenReady?: boolean;
}

/** The environment variable that can carry the token, so it stays out of `ps`. */
export const VIEW_TOKEN_ENV = "MESH_VIEW_TOKEN";

export async function view(options: ViewCliOptions): Promise<ExitCode> {
  using stopping = stopOnSignals({ name: "mesh view", log: () => undefined });
  await using bus = await connectToMesh({ ...options, signal: stopping.signal });
  const listening =
    options.listen === undefined ? undefined : await listenParts(options, bus, stopping.signal);
  const fromEnv = process.env[VIEW_TOKEN_ENV];
  const token =
    listening !== undefined
      ? undefined
      : (options.token ??
        (fromEnv === undefined || fromEnv === "" ? undefined : fromEnv) ??
        (options.expose === true ? newViewToken() : undefined));
  try {
    await using page = await startView({
      bus,
      ...(listening?.view ?? {}),
      ...(options.host === undefined || listening !== undefined ? {} : { host: options.host }),
      ...(options.port === undefined ? {} : { port: options.port }),
      ...(options.expose === undefined ? {} : { expose: options.expose }),
      ...(token === undefined ? {} : { token }),
      actor: `${safeUser()} (view)`,
      actions: viewActions,
      onProblem: (what, error) =>
        process.stderr.write(`mesh view: ${what}: ${(error as Error).message}\n`),
    });
    const access: Access = options.readOnly === true ? "read" : "operate";
    const url = listening === undefined ? page.url : page.loginUrl({ who: safeUser(), access });
    if (listening !== undefined) {
      await writeFileAtomic(listening.file, `${JSON.stringify({ url: page.url })}\n`, {
        mode: 0o600,
      });
    }
    if (options.json === true)
      printJson({ ok: true, url, ...(listening === undefined ? {} : { page: page.url }) });
    else {
      process.stdout.write(
        listening === undefined
          ? `The view is at ${url}\n`
          : `The view is at ${page.url}; log in once with ${url} (\`mesh view-token\` makes another link)\n`,
      );
      if (options.exitWhenReady !== true) process.stdout.write("Press Ctrl-C to stop.\n");
    }
    if (options.exitWhenReady !== true) {
      await Promise.race([aborted(stopping.signal), bus.closed()]);
    }
  } finally {
    for (const b of listening?.buses ?? []) await b.close();
  }
  return ExitCode.ok;
}

/**
 * The parts of a view with logins: the address, the certificate, the login key, and the buses of
 * its principals (with --read-only, every session acts as `view-read`).
 */
async function listenParts(options: ViewCliOptions, bus: MeshBus, signal: AbortSignal) {
  const address = parseListen(options.listen ?? "");
  const paths = rootPaths(rootOf(options));
  const tls = await viewCertificate(paths, address.host);
  const logins = new ViewLogins({ key: await loginKey(paths, true) });
  const read = await connectAsView(bus, "read", signal);
  const operate = options.readOnly === true ? read : await connectAsView(bus, "operate", signal);
  return {
    file: listeningFile(paths),
    buses: operate === read ? [read] : [read, operate],
    view: {
      host: address.host,
      ...(address.port === undefined ? {} : { port: address.port }),
      tls: { cert: tls.cert, key: tls.key },
      logins,
      acting: { busOf: (access: Access) => (access === "read" ? read : operate) },
    },
  };
}

export interface ViewTokenOptions extends FindMeshOptions {
  readonly readOnly?: boolean;
  readonly as?: string;
  readonly minutes?: number;
  readonly json?: boolean;
}

/** `mesh view-token`: a one-time login link for the view this root's `mesh view --listen` runs. */
export async function viewToken(options: ViewTokenOptions): Promise<ExitCode> {
  const paths = rootPaths(rootOf(options));
  const key = await loginKey(paths, false);
  const token = loginToken(key, {
    who: options.as ?? safeUser(),
    access: options.readOnly === true ? "read" : "operate",
    ...(options.minutes === undefined ? {} : { ttlMs: options.minutes * 60_000 }),
  });
  const where = (await readJson(listeningFile(paths)).catch(() => undefined)) as
    { url?: string } | undefined;
  const link = where?.url === undefined ? undefined : `${where.url}login?token=${token}`;
  if (options.json === true)
    printJson({ ok: true, token, ...(link === undefined ? {} : { link }) });
  else
    process.stdout.write(`${link ?? `${token}\n(open <the view's address>/login?token=<it>)`}\n`);
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
          "--listen <address>",
          "serve HTTPS at this address (the mesh's certificate), each operator logging in with a one-time link",
        )
        .option("--read-only", "with --listen: every session reads and acts on nothing")
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
  act(
    meshOptions(
      program
        .command("view-token")
        .description(
          "A one-time login link for the view `mesh view --listen` serves from this root.",
        )
        .option("--read-only", "the session it makes reads only")
        .option("--as <name>", "who logs in with it, as the view records their actions")
        .addOption(
          new Option(
            "--minutes <n>",
            "how long the link can wait to be used (default 15)",
          ).argParser(positiveNumber("--minutes", "--minutes 60", 7 * 24 * 60)),
        ),
      "print the token and link as JSON",
    ),
    viewToken,
  );
}
