/**
 * `mesh up`: a whole mesh on this machine, in one root folder. It brings up the bus (the embedded
 * nats-server under the mesh's own configuration, every bucket and stream of the layout), then
 * the mesh's processes, each its own process on its own credential — the controller, delivery's
 * indexer, builder and assigner, and this machine's host, which joins like any node — registers
 * and assigns the runtime `node-tools` to every node, and serves the view. `--demo` also runs the
 * examples and waits until they are healthy. Ctrl-C (or SIGTERM) stops everything cleanly.
 */
import { createServer } from "node:net";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { Option, type Command } from "commander";
import { z } from "zod";
import { ErrorCode, MeshError, Principal, checkNodeName, isName } from "@mesh/protocol";
import { EmbeddedServer, FULL_PERMISSIONS, MeshBus, ensureLayout, findServer } from "@mesh/bus";
import { assignerGrant, deliveryGrant, mcpGrant, operatorGrant } from "@mesh/core";
import { serverUsersOnDisk } from "@mesh/controller";
import { startView, type View } from "@mesh/view";
import { BusKeeper } from "../up/bus-keeper.js";
import { Children } from "../up/children.js";
import { CLI_MAIN } from "../shipped.js";
import { ensureHostCredential } from "../up/local-node.js";
import {
  DEMO_MODULES,
  NODE_TOOLS_SOURCE,
  examplesSource,
  registerAndAssignEverywhere,
} from "../up/modules.js";
import { waitHealthy } from "../up/wait-healthy.js";
import { ensurePrincipals } from "../principals.js";
import { lockRoot, readJson, rootPaths, writeJson, type RootPaths } from "../mesh-root.js";
import { ExitCode, printJson } from "../output.js";
import { act, portNumber } from "../verb.js";
import { machineArgs, machineOptions, type MachineOptions } from "./host.js";

export interface UpOptions extends MachineOptions {
  readonly root: string;
  readonly node?: string;
  readonly port?: number;
  readonly json?: boolean;
  readonly exitWhenReady?: boolean;
  /** Also register and assign the examples, and wait until they are healthy. */
  readonly demo?: boolean;
  /** Leave the runtime module unassigned (its tools are then served nowhere). */
  readonly runtime?: boolean;
  /** Only the bus, none of the mesh's processes: what the first cut did, for tests of the bus alone. */
  readonly busOnly?: boolean;
  /** The view's port on loopback; 0 (default) picks a free one. */
  readonly viewPort?: number;
  /** How long `--demo` waits for the examples, in ms. */
  readonly demoTimeoutMs?: number;
}

/** What a root remembers between runs, so a second `mesh up` comes back the same. */
const RootState = z.object({ node: z.string(), port: z.number().int() }).strict();
type RootState = z.infer<typeof RootState>;

export const DEFAULT_BUS_PORT = 4222;

export async function up(options: UpOptions): Promise<ExitCode> {
  const paths = rootPaths(options.root);
  const release = await lockRoot(paths);
  const startedAt = new Date();
  const log = (line: string) => {
    if (options.json !== true) process.stderr.write(`mesh up: ${line}\n`);
  };
  let keeper: BusKeeper | undefined;
  let bus: MeshBus | undefined;
  let operatorBus: MeshBus | undefined;
  let view: View | undefined;
  const children = new Children({ logs: join(paths.root, "logs", "mesh"), say: log });
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

    // The mesh's own service principals, issued here because the controller cannot issue its own
    // credential and these run on this machine only; hosts and modules get theirs from the
    // controller's broker (docs/decisions/0050-mesh-up-principals.md).
    const principals = await ensurePrincipals(paths, {
      node,
      servers: [url],
      principals: [
        { principal: Principal.controller, permissions: FULL_PERMISSIONS },
        { principal: Principal.operator, permissions: operatorGrant({ node }) },
        { principal: Principal.assigner, permissions: assignerGrant({ node }) },
        { principal: Principal.delivery, permissions: deliveryGrant({ node }) },
        // `mesh mcp`'s: discovers and calls tools, nothing else (docs/mcp.md).
        { principal: Principal.mcp, permissions: mcpGrant({ node }) },
      ],
    });
    log(`starting nats-server ${binary.version} on ${url}`);
    // Every start, the first and each restart after the server died, runs the users list as it
    // stands on disk: mesh up's principals and every user the broker issued, so no host, runtime
    // or module is refused while the controller catches up.
    keeper = await BusKeeper.start(
      {
        start: async (signal) =>
          EmbeddedServer.start({
            dir: paths.bus,
            port,
            users: await serverUsersOnDisk(join(paths.root, "controller"), principals.users),
            binary,
            serverName: `mesh-${node}`,
            signal,
          }),
        say: log,
      },
      stopping.signal,
    );
    const server = keeper.server;
    await writeJson(paths.state, { node, port } satisfies RootState);

    const credentialOf = (principal: string) => {
      const found = principals.credentials.get(principal);
      if (found === undefined)
        throw new MeshError(ErrorCode.INTERNAL, `the ${principal}'s credential was not made`);
      return found;
    };
    const controller = credentialOf(Principal.controller);
    const operator = credentialOf(Principal.operator);
    bus = await MeshBus.connect(controller.credential, {
      name: "mesh-up",
      signal: stopping.signal,
    });
    const layout = await ensureLayout(bus, { signal: stopping.signal });
    log(
      `bus layout: ${layout.created.length} created` +
        (layout.found.length > 0 ? `, ${layout.found.length} found from an earlier run` : ""),
    );

    const hostCredential = join(paths.credentials, "host.json");
    let viewUrl: string | undefined;
    if (options.busOnly !== true) {
      const cli = (...args: string[]) => [process.execPath, CLI_MAIN, ...args];
      await children.start({ name: "controller", argv: cli("controller", "--root", paths.root) });
      for (const daemon of ["indexer", "builder", "assigner"] as const) {
        const principal = daemon === "assigner" ? Principal.assigner : Principal.delivery;
        await children.start({
          name: daemon,
          argv: cli(daemon, "--credential", credentialOf(principal).path),
        });
      }
      operatorBus = await MeshBus.connect(operator.credential, {
        name: "mesh-up-operator",
        signal: stopping.signal,
      });
      const by = `mesh up (${operator.credential.user})`;
      const registering = { by, signal: stopping.signal, say: log };
      if (options.runtime !== false)
        await registerAndAssignEverywhere(operatorBus, NODE_TOOLS_SOURCE, registering);
      await ensureHostCredential({
        operator: operatorBus,
        node,
        servers: [url],
        root: paths.root,
        credentialFile: hostCredential,
        signal: stopping.signal,
        say: log,
      });
      await children.start({
        name: "host",
        argv: cli(
          "host",
          "--node",
          node,
          "--root",
          paths.root,
          "--credential",
          hostCredential,
          "--stop-processes-on-exit",
          ...machineArgs(options),
        ),
      });
      view = await startView({
        bus: operatorBus,
        port: options.viewPort ?? 0,
        signal: stopping.signal,
      });
      viewUrl = view.url;
      if (options.demo === true) {
        const demo: string[] = [];
        for (const example of DEMO_MODULES) {
          demo.push(
            await registerAndAssignEverywhere(operatorBus, examplesSource(example), registering),
          );
        }
        log(
          `the view is at ${view.url}; building and starting the examples (the first build takes a while)`,
        );
        await waitHealthy(operatorBus, {
          node,
          modules: options.runtime === false ? demo : ["node-tools", ...demo],
          timeoutMs: options.demoTimeoutMs ?? 300_000,
          since: startedAt,
          signal: stopping.signal,
          say: log,
        });
      }
    }

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
      credentials: {
        operator: operator.path,
        controller: controller.path,
        ...(options.busOnly === true ? {} : { host: hostCredential }),
      },
      processes: children.pids(),
      ...(viewUrl === undefined ? {} : { view: viewUrl }),
      logs: join(paths.root, "logs"),
      layout,
    };
    if (options.json === true) {
      printJson({ ok: true, ...report });
    } else {
      printReady(report, paths, options.exitWhenReady !== true, options.demo === true);
    }

    if (options.exitWhenReady !== true) {
      // The bus keeper starts nats-server again whenever it dies; only a stop ends mesh up.
      await new Promise<void>((resolve) =>
        stopping.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
    }
    return ExitCode.ok;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await view?.close().catch(() => undefined);
    await children.stop();
    await operatorBus?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    if (keeper !== undefined) {
      await keeper.stop();
      log("stopped");
    }
    await release();
  }
}

function printReady(
  report: {
    bus: { url: string; pid: number; log: string; store: string };
    credentials: { operator: string };
    processes: Record<string, number>;
    view?: string;
    logs: string;
  },
  paths: RootPaths,
  staying: boolean,
  demo: boolean,
): void {
  const root = paths.root === resolve("./.mesh") ? "" : ` --root ${paths.root}`;
  const lines = [
    "",
    "The mesh is up.",
    ...(report.view === undefined ? [] : [`  view        ${report.view}`]),
    `  bus         ${report.bus.url} (nats-server, pid ${report.bus.pid})`,
    ...Object.entries(report.processes).map(([name, pid]) => `  ${name.padEnd(11)} pid ${pid}`),
    `  data        ${report.bus.store}`,
    `  logs        ${report.logs}`,
    `  operator    ${report.credentials.operator}  (mode 0600; verbs find it through --root)`,
    "",
    ...(demo
      ? [
          "Try:",
          `  mesh call hello/greet '{"name":"Ada"}'${root}`,
          `  mesh config set hello greeting '"Hi"'${root}   # the next greeting says Hi, nothing restarts`,
          `  mesh status${root}`,
          "",
        ]
      : []),
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

export const DEFAULT_ROOT = "./.mesh";

export function registerUpVerb(program: Command): void {
  act(
    machineOptions(program.command("up"))
      .description("Start a whole mesh on this machine in a root folder; Ctrl-C stops it cleanly.")
      .option("--root <dir>", "where the mesh keeps its bus, data and credentials", DEFAULT_ROOT)
      .option("--node <name>", "this machine's node name (default: from the hostname)")
      .addOption(
        new Option(
          "--port <port>",
          "the bus's client port (default: 4222, or a free one)",
        ).argParser(portNumber("--port")),
      )
      .option("--json", "print where everything is as JSON")
      .option(
        "--demo",
        "also run the examples (hello, counter, board, broken) and wait until they are healthy",
      )
      .option("--no-runtime", "do not assign the tool runtime (node-tools) to every node")
      .option("--bus-only", "start only the bus, none of the mesh's processes")
      .addOption(
        new Option(
          "--view-port <port>",
          "the view's port on loopback (default: a free one)",
        ).argParser(portNumber("--view-port")),
      )
      .option("--exit-when-ready", "stop again as soon as everything is up (for scripts and CI)"),
    up,
  );
}
