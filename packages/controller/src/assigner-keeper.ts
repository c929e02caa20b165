/**
 * The assigner keeper (decision 0191): rule 5 for the assigner's own cells, run in the controller's
 * process. A build of `mesh-assigner` its node reports failing cannot set itself back; this
 * reconciler, keyed by node, mirrors that module's wants, have reports (with history), builds and
 * retries, asks core's `assignerSetBack` what the rule says, and writes the set-back want. It
 * writes nothing else: every other want stays as the last healthy assigner left it, and the
 * assigner, once it runs again, decides the same cell by the same rule and keeps it.
 */
import {
  KvBucket,
  openedOnWatch,
  reconciler,
  type MeshBus,
  type Mirror,
  type Reconciler,
  type SourceChange,
} from "@mesh/bus";
import { assignerSetBack, foldHave, type HaveRecord } from "@mesh/core";
import type { Daemon, Lifecycle, RunOptions } from "@mesh/kit";
import {
  ALL_NODES,
  Bucket,
  MeshPart,
  nodeModuleKey,
  parseBuildKey,
  parseNodeModuleKey,
  parseTargetModuleKey,
  targetModuleKey,
  type Build,
  type Have,
  type Want,
} from "@mesh/protocol";

const MODULE = MeshPart.assigner;

function keeperSources(bus: MeshBus) {
  return {
    wants: { bucket: openedOnWatch(bus, Bucket.wants), key: `*.${MODULE}` },
    have: {
      bucket: openedOnWatch(bus, Bucket.have),
      key: `*.${MODULE}`,
      include: "history" as const,
      fold: (before: HaveRecord | undefined, have: Have | undefined, revision: number) =>
        foldHave(before, have, revision),
      // A node's report is news even when it repeats itself: its history grew.
      equal: () => false,
    },
    builds: { bucket: openedOnWatch(bus, Bucket.builds), key: `${MODULE}.*` },
    retries: { bucket: openedOnWatch(bus, Bucket.retries), key: `*.${MODULE}` },
  };
}
type KeeperSources = ReturnType<typeof keeperSources>;

export class AssignerKeeper implements Daemon {
  readonly #bus: MeshBus;
  readonly #log: (line: string) => void;
  readonly #reconciler: Reconciler<KeeperSources, string>;
  #wants: Promise<KvBucket<Want>> | undefined;

  private constructor(options: { bus: MeshBus; log?: (line: string) => void }) {
    this.#bus = options.bus;
    this.#log = options.log ?? (() => undefined);
    this.#reconciler = reconciler<KeeperSources, string>({
      name: "assigner keeper",
      sources: keeperSources(options.bus),
      keysOf: (change, mirror) => keysOf(change, mirror),
      allKeys: (mirror) => nodesWanting(mirror),
      reconcile: (node, { mirror, signal }) => this.#reconcile(node, mirror, signal),
      retry: { initialMs: 1_000, maxMs: 60_000 },
      log: this.#log,
    });
  }

  static create(options: { bus: MeshBus; log?: (line: string) => void }): AssignerKeeper {
    return new AssignerKeeper(options);
  }

  get state(): Lifecycle {
    return this.#reconciler.state;
  }

  run(options: RunOptions): Promise<void> {
    return this.#reconciler.run(options);
  }

  stop(): Promise<void> {
    return this.#reconciler.stop();
  }

  async #reconcile(
    node: string,
    mirror: Mirror<KeeperSources>,
    signal: AbortSignal,
  ): Promise<void> {
    const key = nodeModuleKey(node, MODULE);
    const builds = new Map<string, Build>();
    for (const [k, b] of mirror.map("builds")) builds.set(parseBuildKey(k).build, b);
    const retries = mirror.map("retries");
    const lifted = Math.max(
      retries.get(targetModuleKey({ node }, MODULE))?.haveRevision ?? 0,
      retries.get(targetModuleKey({ all: true }, MODULE))?.haveRevision ?? 0,
    );
    const want = mirror.map("wants").get(key);
    const setBack = assignerSetBack({
      node,
      module: MODULE,
      want,
      have: mirror.map("have").get(key),
      builds,
      lifted,
    });
    if (setBack === undefined) return;
    this.#wants ??= KvBucket.open(this.#bus, Bucket.wants);
    const wants = await this.#wants.catch((error: unknown) => {
      this.#wants = undefined;
      throw error;
    });
    await wants.put(key, setBack, { signal });
    this.#log(
      `assigner keeper: ${node} reported ${MODULE} build ${want?.build ?? "?"} failing; set back to ${setBack.build} (decision 0191)`,
    );
  }
}

/** The nodes a change concerns: its own for a cell's key, every wanting node for the rest. */
function keysOf(change: SourceChange<KeeperSources>, mirror: Mirror<KeeperSources>): string[] {
  if (change.source === "builds") return nodesWanting(mirror);
  if (change.source === "retries") {
    const { target } = parseTargetModuleKey(change.key);
    return "all" in target ? nodesWanting(mirror) : [target.node];
  }
  const { node } = parseNodeModuleKey(change.key);
  return node === ALL_NODES ? [] : [node];
}

function nodesWanting(mirror: Mirror<KeeperSources>): string[] {
  return [...mirror.map("wants").keys()].map((k) => parseNodeModuleKey(k).node);
}
