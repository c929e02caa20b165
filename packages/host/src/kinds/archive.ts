/**
 * The archive kind: a bundle unpacked at a path. An archive resource (a tools bundle the runtime
 * loads) is one; so is the bundle a process resource runs, delivered with its process and not
 * again as an archive. Several resources may name one path, and then must name one digest: a
 * module whose resources do not is refused whole (its conflict).
 *
 * - check: every new bundle is fetched, verified and unpacked beside its path before anything
 *   stops, so a bad one fails its module while what it ran keeps running; the bus not there or
 *   not answering says nothing about the build: the module waits for the bus.
 * - remove: the bundles nothing wants any more.
 * - apply: each checked bundle moved into place (one rename of its link).
 */
import { isBusTrouble } from "@mesh/bus";
import { ErrorCode, type Resource } from "@mesh/protocol";
import {
  DEFAULT_ARCHIVE_LIMITS,
  checkBundlePath,
  fetchVerified,
  placeBundle,
  removeBundle,
  unpackBeside,
} from "../archives.js";
import { sortedEntries, type Kind, type Pass } from "./kind.js";

/** A bundle to deliver at `path`. */
export interface Delivery {
  readonly path: string;
  readonly module: string;
  readonly source: string;
  readonly digest: string;
}

export interface ArchiveDesired {
  /** By path. */
  readonly deliveries: ReadonlyMap<string, Delivery>;
  /** Modules whose resources contradict each other (two digests for one path), with why. */
  readonly conflicts: ReadonlyMap<string, string>;
}

export interface ArchivePlan {
  /** Deliveries whose bundle must be fetched, checked and unpacked beside its path. */
  readonly fetch: readonly Delivery[];
  /** Bundle paths to remove. */
  readonly removeDeliveries: readonly string[];
  /** Deliveries to move into place (the fetched ones). */
  readonly place: readonly Delivery[];
}

type ArchivePass = Pass<ArchiveDesired, ArchivePlan>;

export const archiveKind = {
  name: "archive",

  desired(resources: readonly Resource[]): ArchiveDesired {
    const deliveries = new Map<string, Delivery>();
    const conflicts = new Map<string, string>();
    for (const r of resources) {
      // A need is a file; the host build is the host kind's (kinds/host.ts).
      if (r.type === "need" || r.type === "host") continue;
      const seen = deliveries.get(r.path);
      if (seen !== undefined && (seen.digest !== r.digest || seen.module !== r.module)) {
        conflicts.set(
          r.module,
          `${r.id} asks for ${r.digest.slice(0, 12)}… at ${JSON.stringify(r.path)}, where ${seen.module} already asks for ${seen.digest.slice(0, 12)}…; the composition is inconsistent — recompose the node`,
        );
      } else
        deliveries.set(r.path, {
          path: r.path,
          module: r.module,
          source: r.source,
          digest: r.digest,
        });
    }
    return { deliveries, conflicts };
  },

  plan(desired, applied): ArchivePlan {
    const fetch = sortedEntries(desired.deliveries)
      .map(([, d]) => d)
      .filter((d) => applied.deliveries[d.path]?.digest !== d.digest);
    const removeDeliveries = Object.keys(applied.deliveries)
      .filter((path) => !desired.deliveries.has(path))
      .sort();
    return { fetch, removeDeliveries, place: fetch };
  },

  check: async (pass: ArchivePass, context): Promise<void> => {
    const { root, signal } = context;
    const limits = context.archiveLimits ?? DEFAULT_ARCHIVE_LIMITS;
    const artifacts = context.artifacts();
    for (const d of pass.plan.fetch) {
      if (pass.failed.has(d.module)) continue;
      try {
        checkBundlePath(root, d.module, d.path);
        const file = await fetchVerified({
          root,
          module: d.module,
          source: d.source,
          digest: d.digest,
          fetch: artifacts === undefined ? undefined : (digest, o) => artifacts.get(digest, o),
          signal,
        });
        await unpackBeside({ file, path: d.path, digest: d.digest, module: d.module, limits });
      } catch (error) {
        // The bus not there or not answering (a reload, JetStream's API without a responder)
        // says nothing about the build: the module waits for the bus, and what ran keeps running.
        if (artifacts === undefined || isBusTrouble(error)) {
          const why = error instanceof Error ? error.message : String(error);
          pass.waiting.set(d.module, {
            code: ErrorCode.BUS_UNAVAILABLE,
            what: `waiting for the bus to fetch ${d.module}'s bundle (${why.slice(0, 300)})`,
            fix: "nothing to do: the host fetches it again as soon as the bus answers; if it stays, check that the bus runs (`mesh up`)",
          });
        }
        pass.fail(d.module, error);
      }
    }
  },

  remove: async (pass: ArchivePass, { store }): Promise<void> => {
    for (const path of pass.plan.removeDeliveries) {
      await removeBundle(path);
      store.forget("deliveries", path);
    }
  },

  apply: async (pass: ArchivePass, { store }): Promise<void> => {
    for (const d of pass.plan.place) {
      if (pass.failed.has(d.module)) continue;
      try {
        await placeBundle(d.path, d.digest);
        store.record("deliveries", d.path, { module: d.module, digest: d.digest });
      } catch (error) {
        pass.fail(d.module, error);
      }
    }
  },
} satisfies Kind<ArchiveDesired, ArchivePlan>;
