/**
 * `mesh up`: a whole mesh on this machine, in one root folder. This first cut brings up the bus:
 * the embedded nats-server under the mesh's own configuration, every bucket and stream of the
 * layout, and the operator's credential. Ctrl-C (or SIGTERM) stops everything cleanly.
 */
import { createServer } from "node:net";
import { hostname } from "node:os";
import { z } from "zod";
import { ErrorCode, MeshError, Principal, checkNodeName, isName } from "@mesh/protocol";
import { EmbeddedServer, FULL_PERMISSIONS, MeshBus, ensureLayout, findServer } from "@mesh/bus";
import { operatorGrant } from "@mesh/core";
import { ensurePrincipals } from "../principals.js";
import { lockRoot, readJson, rootPaths, writeJson, type RootPaths } from "../mesh-root.js";
import { ExitCode, printJson } from "../output.js";

export interface UpOptions {
  readonly root: string;
  readonly node?: string;
  readonly port?: number;
  readonly json?: boolean;
  readonly exitWhenReady?: boolean;
}

/** What a root remembers between runs, so a second `mesh up` comes back the same. */
const RootState = z.object({ node: z.string(), port: z.number().int() }).strict();
type RootState = z.infer<typeof RootState>;

export const DEFAULT_BUS_PORT = 4222;

export async function up(options: UpOptions): Promise<ExitCode> {
  const paths = rootPaths(options.root);
  const release = await lockRoot(paths);
  const log = (line: string) => {
    if (options.json !== true) process.stderr.write(`mesh up: ${line}\n`);
  };
  let server: EmbeddedServer | undefined;
  let bus: MeshBus | undefined;
  const stopping = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    stopping.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const previous = await readState(paths);
    const node = checkNodeName(options.node ?? previous?.node ?? nodeFromHostname());
    const binary = await findServer({ signal: stopping.signal });
    const port = options.port ?? previous?.port ?? (await pickPort());
    const url = `nats://127.0.0.1:${port}`;

    const principals = await ensurePrincipals(paths, {
      node,
      servers: [url],
      principals: [
        { principal: Principal.controller, permissions: FULL_PERMISSIONS },
        { principal: Principal.operator, permissions: operatorGrant({ node }) },
      ],
    });
    log(`starting nats-server ${binary.version} on ${url}`);
    server = await EmbeddedServer.start({
      dir: paths.bus,
      port,
      users: principals.users,
      binary,
      serverName: `mesh-${node}`,
      signal: stopping.signal,
    });
    await writeJson(paths.state, { node, port } satisfies RootState);

    const controller = principals.credentials.get(Principal.controller);
    const operator = principals.credentials.get(Principal.operator);
    if (controller === undefined || operator === undefined) {
      throw new MeshError(
        ErrorCode.INTERNAL,
        "the controller's or operator's credential was not made",
      );
    }
    bus = await MeshBus.connect(controller.credential, {
      name: "mesh-up",
      signal: stopping.signal,
    });
    const layout = await ensureLayout(bus, { signal: stopping.signal });
    log(
      `bus layout: ${layout.created.length} created` +
        (layout.found.length > 0 ? `, ${layout.found.length} found from an earlier run` : ""),
    );

    const report = {
      root: paths.root,
      node,
      bus: {
        url,
        pid: server.pid,
        version: server.version,
        config: server.configPath,
        log: server.logPath,
        store: server.storeDir,
      },
      credentials: { operator: operator.path, controller: controller.path },
      layout,
    };
    if (options.json === true) {
      printJson({ ok: true, ...report });
    } else {
      printReady(report.bus, report.credentials.operator, paths, options.exitWhenReady !== true);
    }

    if (options.exitWhenReady !== true) {
      await Promise.race([
        new Promise<void>((resolve) =>
          stopping.signal.addEventListener("abort", () => resolve(), { once: true }),
        ),
        server.exited.then((exit) => {
          throw new MeshError(
            ErrorCode.SERVER_START_FAILED,
            `nats-server stopped by itself (code ${String(exit.code)}, signal ${String(exit.signal)}); its last words:\n${exit.lastLines.join("\n")}\nsee ${server?.logPath ?? paths.bus}`,
          );
        }),
      ]);
    }
    return ExitCode.ok;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await bus?.close().catch(() => undefined);
    if (server !== undefined) {
      await server.stop();
      log("nats-server stopped");
    }
    await release();
  }
}

function printReady(
  bus: { url: string; pid: number; log: string; store: string },
  operator: string,
  paths: RootPaths,
  staying: boolean,
): void {
  const lines = [
    "",
    "The mesh is up.",
    `  bus         ${bus.url} (nats-server, pid ${bus.pid})`,
    `  data        ${bus.store}`,
    `  bus log     ${bus.log}`,
    `  root        ${paths.root}`,
    `  operator    ${operator}  (mode 0600; verbs use it through --root ${paths.root})`,
    "",
    staying ? "Press Ctrl-C to stop.\n" : "",
  ];
  process.stdout.write(lines.join("\n"));
}

async function readState(paths: RootPaths): Promise<RootState | undefined> {
  const raw = await readJson(paths.state);
  if (raw === undefined) return undefined;
  const parsed = RootState.safeParse(raw);
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${paths.state} is not what mesh up wrote (${parsed.error.issues[0]?.message ?? "bad shape"}); fix or remove it (the bus data stays)`,
      { path: paths.state },
    );
  }
  return parsed.data;
}

/** The machine's name as a node name: lowercased, with anything else turned into `-`. */
export function nodeFromHostname(name = hostname()): string {
  const cleaned = name
    .toLowerCase()
    .split(".")[0]!
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .replace(/-+$/, "")
    .slice(0, 63);
  return isName("node", cleaned) ? cleaned : "node-1";
}

/** 4222 when it is free, else a port the system picks. */
async function pickPort(): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const probe = createServer();
      probe.once("error", () => resolve(undefined));
      probe.listen(port, "127.0.0.1", () => {
        const address = probe.address();
        const chosen = typeof address === "object" && address !== null ? address.port : undefined;
        probe.close(() => resolve(chosen));
      });
    });
  return (await tryListen(DEFAULT_BUS_PORT)) ?? (await tryListen(0)) ?? DEFAULT_BUS_PORT;
}
