/**
 * The mesh's processes as `mesh up` starts them once its bus is there: the controller and the
 * build modules as its own children; the runtime registered and assigned everywhere; delivery's
 * parts (indexer, builder, assigner) registered from the archives the CLI ships and placed on the
 * delivery node, whose host runs them as modules (decision 0190); this machine's host (joined like
 * any node); the view; and with `--demo` the examples, waited for until healthy.
 */
import { Principal } from "@mesh/protocol";
import { MeshBus, writeCredential } from "@mesh/bus";
import { startView, type View } from "@mesh/view";
import { SHIPPED_LANGUAGES } from "@mesh/delivery";
import type { UpOptions } from "./up-options.js";
import { machineArgs } from "../commands/node/host.js";
import type { RootPaths } from "../mesh-root.js";
import { CLI_MAIN } from "../shipped.js";
import type { Children } from "./children.js";
import { startDeliveryParts, type DeliveryPlacement } from "./delivery-parts.js";
import { startHostModule } from "./host-module.js";
import { ensureHostCredential } from "./local-node.js";
import {
  DEMO_MODULES,
  NODE_TOOLS_SOURCE,
  examplesSource,
  registerAndAssignEverywhere,
} from "./modules.js";
import type { UpBus } from "./up-bus.js";
import { waitHealthy } from "./wait-healthy.js";

/** What `mesh up` has started so far, stopped in reverse when it ends. */
export interface Held {
  readonly children: Children;
  upBus?: UpBus;
  bus?: MeshBus;
  operatorBus?: MeshBus;
  view?: View;
  /** Where delivery's parts run, once placed. */
  delivery?: DeliveryPlacement;
}

export async function stopHeld(held: Held, log: (line: string) => void): Promise<void> {
  await held.view?.close().catch(() => undefined);
  await held.children.stop();
  await held.operatorBus?.close().catch(() => undefined);
  await held.bus?.close().catch(() => undefined);
  if (held.upBus !== undefined) {
    await held.upBus.stop();
    log("stopped");
  }
}

/** What starting the processes needs of `mesh up`. */
export interface MeshProcessesContext {
  readonly options: UpOptions;
  readonly paths: RootPaths;
  readonly node: string;
  readonly started: UpBus;
  /** Where each process started is kept, so that `mesh up` stops it whatever happens next. */
  readonly held: Held;
  readonly hostCredential: string;
  readonly startedAt: Date;
  readonly log: (line: string) => void;
  readonly signal: AbortSignal;
}

const cli = (...args: string[]): string[] => [process.execPath, CLI_MAIN, ...args];

export async function startMeshProcesses(c: MeshProcessesContext): Promise<void> {
  const { options, paths, started, held, log, signal } = c;
  await held.children.start({
    name: "controller",
    argv: cli(
      "controller",
      "--root",
      paths.root,
      ...started.controllerArgs,
      ...(options.credentialLifetimeMs === undefined
        ? []
        : ["--credential-lifetime-ms", String(options.credentialLifetimeMs)]),
    ),
  });
  // One build module per language the mesh ships (decision 0160); the builder asks them.
  for (const language of SHIPPED_LANGUAGES) {
    await held.children.start({
      name: `build-${language}`,
      argv: cli(
        "build-module",
        language,
        "--credential",
        started.credentialOf(Principal.build).path,
      ),
    });
  }
  const operator = started.credentialOf(Principal.operator).credential;
  const operatorBus = await MeshBus.connect(operator, { name: "mesh-up-operator", signal });
  held.operatorBus = operatorBus;
  const registering = { by: `mesh up (${operator.user})`, signal, say: log };
  if (options.runtime !== false)
    await registerAndAssignEverywhere(operatorBus, NODE_TOOLS_SOURCE, registering);
  // Before the host: its first composition then runs them (decision 0190, the bootstrap order).
  const bus = held.bus;
  if (bus === undefined) throw new Error("mesh up holds no controller connection");
  held.delivery = await startDeliveryParts({
    admin: bus,
    here: c.node,
    deliveryOn: options.deliveryOn,
    by: registering.by,
    signal,
    say: log,
  });
  // The host build every node runs (decision 0200): the one this CLI ships, its own.
  await startHostModule({
    admin: bus,
    operator: operatorBus,
    by: registering.by,
    signal,
    say: log,
  });
  await startHost(c, operatorBus);
  const view = await startView({ bus: operatorBus, port: options.viewPort ?? 0, signal });
  held.view = view;
  if (options.demo !== true) return;
  const demo: string[] = [];
  for (const example of DEMO_MODULES)
    demo.push(await registerAndAssignEverywhere(operatorBus, examplesSource(example), registering));
  log(
    `the view is at ${view.url}; building and starting the examples (the first build takes a while)`,
  );
  await waitHealthy(operatorBus, {
    node: c.node,
    modules: [
      ...(options.runtime === false ? [] : ["node-tools"]),
      ...(held.delivery.node === c.node ? held.delivery.parts.map((p) => p.module) : []),
      ...demo,
    ],
    timeoutMs: options.demoTimeoutMs ?? 300_000,
    since: c.startedAt,
    signal,
    say: log,
  });
}

/** This machine's host: its credential (given by a foreign bus, or joined), then its process. */
async function startHost(c: MeshProcessesContext, operatorBus: MeshBus): Promise<void> {
  const { started, paths, node, hostCredential } = c;
  if (started.hostCredential !== undefined) {
    await writeCredential(hostCredential, started.hostCredential);
  } else {
    await ensureHostCredential({
      operator: operatorBus,
      node,
      servers: started.urls,
      pin: started.pin,
      root: paths.root,
      credentialFile: hostCredential,
      signal: c.signal,
      say: c.log,
    });
  }
  await c.held.children.start({
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
      ...machineArgs(c.options),
    ),
  });
}
