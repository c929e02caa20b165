/**
 * `mesh up`: a whole mesh on this machine, in one root folder. It brings up the bus (the embedded
 * nats-server under the mesh's own configuration, every bucket and stream of the layout), then
 * the mesh's processes, each its own process on its own credential — the controller and this
 * machine's host, which joins like any node — registers and assigns the runtime `node-tools` to
 * every node, registers delivery's parts (indexer, builder, assigner) from the archives the CLI
 * ships and places them on the delivery node, whose host runs them as modules (decision 0190),
 * and serves the view. `--demo` also runs the
 * examples and waits until they are healthy. Ctrl-C (or SIGTERM) stops everything cleanly.
 */
import { createServer } from "node:net";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { Option, type Command } from "commander";
import { Principal, checkNodeName, isName } from "@mesh/protocol";
import { MeshBus, ensureLayout, type LayoutOptions } from "@mesh/bus";
import { AuthMode } from "@mesh/bus/server";
import { stopOnSignals } from "@mesh/kit";
import { clusterSize } from "../../up/bus-shape.js";
import { busChoiceOf, readState, startUpBus, type UpBus } from "../../up/up-bus.js";
import { startMeshProcesses, stopHeld, type Held } from "../../up/mesh-processes.js";
import type { UpOptions } from "../../up/up-options.js";
import { Children } from "../../up/children.js";
import { DEFAULT_ROOT, rootOf } from "../../find-mesh.js";
import { lockRoot, rootPaths, type RootPaths } from "../../mesh-root.js";
import { ExitCode, printJson } from "../../output.js";
import { MAX_TIMER_MS, act, portNumber, positiveNumber } from "../../verb.js";
import { machineOptions } from "../node/host.js";

export const DEFAULT_BUS_PORT = 4222;

/** How long stopping the children, the view and the bus may take before `mesh up` exits anyway. */
const UP_STOP_GRACE_MS = 60_000;

export async function up(options: UpOptions): Promise<ExitCode> {
  const paths = rootPaths(options.root);
  const release = await lockRoot(paths);
  const startedAt = new Date();
  const log = (line: string) => {
    if (options.json !== true) process.stderr.write(`mesh up: ${line}\n`);
  };
  const held: Held = {
    children: new Children({ logs: join(paths.root, "logs", "mesh"), say: log }),
  };
  // Ctrl-C stops everything cleanly; a second one, or a stop past the grace, exits at once.
  using stopping = stopOnSignals({ name: "mesh up", graceMs: UP_STOP_GRACE_MS, log });
  try {
    const previous = await readState(paths);
    const node = checkNodeName(options.node ?? previous?.node ?? nodeFromHostname());
    const started = await startUpBus({
      paths,
      node,
      previous,
      ...busChoiceOf(options),
      pickPort,
      say: log,
      signal: stopping.signal,
    });
    held.upBus = started;
    const controller = started.credentialOf(Principal.controller);
    held.bus = await MeshBus.connect(controller.credential, {
      name: "mesh-up",
      signal: stopping.signal,
    });
    const layout = await ensureLayout(held.bus, layoutOptions(started, stopping.signal));
    log(layoutLine(layout));

    const hostCredential = join(paths.credentials, "host.json");
    if (options.busOnly !== true) {
      await startMeshProcesses({
        options,
        paths,
        node,
        started,
        held,
        hostCredential,
        startedAt,
        log,
        signal: stopping.signal,
      });
    }
    const report = {
      root: paths.root,
      node,
      bus: busReport(started),
      credentials: {
        operator: started.credentialOf(Principal.operator).path,
        controller: controller.path,
        ...(options.busOnly === true ? {} : { host: hostCredential }),
      },
      processes: held.children.pids(),
      ...deliveryReport(held),
      ...(held.view === undefined ? {} : { view: held.view.url }),
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
    await stopHeld(held, log);
    await release();
  }
}

/**
 * The layout's options: the servers mesh up started itself are all coming, so a copy refused for
 * want of one (its JetStream not joined yet: a cluster elects with a majority) is waited for
 * instead of taking fewer copies for good.
 */
function layoutOptions(started: UpBus, signal: AbortSignal): LayoutOptions {
  return { signal, ...(started.local === undefined ? {} : { peers: started.urls.length }) };
}

function layoutLine(layout: Awaited<ReturnType<typeof ensureLayout>>): string {
  return (
    `bus layout: ${layout.created.length} created` +
    (layout.replicas === undefined
      ? ""
      : ` with ${layout.replicas} cop${layout.replicas === 1 ? "y" : "ies"} each`) +
    (layout.found.length > 0 ? `, ${layout.found.length} found from an earlier run` : "")
  );
}

function printReady(
  report: {
    bus: {
      urls: readonly string[];
      store?: string;
      servers: readonly { url: string; pid: number }[];
    };
    credentials: { operator: string };
    processes: Record<string, number>;
    delivery?: { node: string; parts: Record<string, string> };
    view?: string;
    logs: string;
  },
  paths: RootPaths,
  staying: boolean,
  demo: boolean,
): void {
  const root = paths.root === resolve(DEFAULT_ROOT) ? "" : ` --root ${paths.root}`;
  const lines = [
    "",
    "The mesh is up.",
    ...(report.view === undefined ? [] : [`  view        ${report.view}`]),
    ...(report.bus.servers.length === 0
      ? [`  bus         ${report.bus.urls.join(",")} (not the mesh's own)`]
      : report.bus.servers.map(
          (s, i, all) =>
            `  ${i === 0 ? "bus" : ""}`.padEnd(14) +
            `${s.url} (nats-server, pid ${s.pid}${all.length > 1 ? `, server ${i + 1} of ${all.length}` : ""})`,
        )),
    ...Object.entries(report.processes).map(([name, pid]) => `  ${name.padEnd(11)} pid ${pid}`),
    ...(report.delivery === undefined
      ? []
      : [
          `  delivery    ${Object.entries(report.delivery.parts)
            .map(([part, build]) => `${part} ${build}`)
            .join(", ")} on ${report.delivery.node}, run by its host`,
        ]),
    ...(report.bus.store === undefined ? [] : [`  data        ${report.bus.store}`]),
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

/** Where delivery's parts run and each one's build, for the report (decision 0190). */
function deliveryReport(held: Held): {
  delivery?: { node: string; parts: Record<string, string> };
} {
  if (held.delivery === undefined) return {};
  const { node, parts } = held.delivery;
  return { delivery: { node, parts: Object.fromEntries(parts.map((p) => [p.module, p.build])) } };
}

/** Where the bus is, for the report: each server the mesh runs, or the foreign bus's urls. */
function busReport(upBus: UpBus) {
  const servers = upBus.local?.servers ?? [];
  const first = servers[0];
  return {
    url: upBus.urls[0] ?? "",
    urls: upBus.urls,
    foreign: upBus.local === undefined,
    // The urls as the credentials name them (tls:// with --listen), not the servers' own.
    servers: servers.map((s, i) => ({
      url: upBus.urls[i] ?? s.url,
      pid: s.pid,
      log: s.logPath,
      store: s.storeDir,
    })),
    ...(first === undefined
      ? {}
      : {
          pid: first.pid,
          version: first.version,
          auth: first.auth,
          config: first.configPath,
          log: first.logPath,
          store: first.storeDir,
        }),
  };
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

export function registerUpVerb(program: Command): void {
  act(
    machineOptions(program.command("up"))
      .description("Start a whole mesh on this machine in a root folder; Ctrl-C stops it cleanly.")
      .option(
        "--root <dir>",
        "where the mesh keeps its bus, data and credentials (or MESH_ROOT)",
        rootOf({}), // MESH_ROOT, else ./.mesh
      )
      .option("--node <name>", "this machine's node name (default: from the hostname)")
      .option(
        "--delivery-on <node>",
        "the node whose host runs delivery's parts (indexer, builder, assigner); default: where they run already, else this machine's node",
      )
      .addOption(
        new Option(
          "--port <port>",
          "the bus's client port (default: 4222, or a free one)",
        ).argParser(portNumber("--port")),
      )
      .addOption(
        new Option(
          "--cluster <servers>",
          "run this many nats-servers (3 or more) in a JetStream cluster, every stream with 3 copies",
        ).argParser(clusterSize),
      )
      .option(
        "--bus <urls>",
        "run on a bus that already exists (nats://a:4222,nats://b:4222), with --bus-credential",
      )
      .option(
        "--bus-credential <file>",
        "the login (JSON: user, password; fingerprint and ca to pin TLS) the bus's operator gave the mesh",
      )
      .option(
        "--listen <addr>",
        "serve the bus (and cluster routes) for other machines on this address (host or host:port), over TLS; with --cluster, one address per server (A,B,C)",
      )
      .option(
        "--server-netns <names>",
        "with --cluster and one --listen address per server: run each server in that network namespace (ns1,ns2,ns3), as on machines of their own",
      )
      .option(
        "--tls-cert <file>",
        "with --listen: the certificate to serve (default: one the mesh makes)",
      )
      .option("--tls-key <file>", "with --listen: the key of --tls-cert")
      .option(
        "--insecure",
        "allow plain TCP beyond this machine (--listen without TLS, or a plain --bus)",
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
      .option("--exit-when-ready", "stop again as soon as everything is up (for scripts and CI)")
      .addOption(
        new Option(
          "--credential-lifetime-ms <ms>",
          "accounts mode: how long a host's, runtime's or module's credential lives; the controller renews it with a third left (default 21600000: 6 hours)",
        ).argParser(positiveNumber("--credential-lifetime-ms", "21600000", MAX_TIMER_MS)),
      )
      .addOption(
        new Option(
          "--auth <mode>",
          "how the mesh's own bus lets users in: accounts (signed users, no reloads; default for a new root) or users (a users list, reloaded on each change)",
        ).choices([AuthMode.accounts, AuthMode.users]),
      ),
    up,
  );
}
