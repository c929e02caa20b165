/**
 * The host kind (decision 0200): the node's host build, the composition's one `host` resource.
 * When it names a build other than the one running, the build is fetched, verified and unpacked
 * under `<root>/host` like any bundle, and the running host asks its launcher to hand the node
 * over to it; until the new host says it is healthy, `mesh-host` is `starting` here
 * (HOST_HANDOVER). A build that did not take the node over fails `mesh-host` here
 * (HOST_UPGRADE_FAILED), so the rollout halts and sets the node back; it is not tried again while
 * the composition names it.
 *
 * - check: fetch, verify and unpack the new build before anything stops (the bus not answering is
 *   a wait for the bus, as for any bundle).
 * - apply: once every other kind applied, ask for the handover; not while the runtime's own
 *   handover drains (a host that let go then would leave the draining runtime to be ended).
 */
import { access } from "node:fs/promises";
import { join } from "node:path";
import { isBusTrouble } from "@mesh/bus";
import {
  ErrorCode,
  HOST_MODULE,
  MESH_VERSION,
  MeshError,
  RUNTIME_PROCESS_ID,
  type HostResource,
  type Resource,
} from "@mesh/protocol";
import { DEFAULT_ARCHIVE_LIMITS, fetchVerified, unpackBeside } from "../archives.js";
import { hostBuildDir, hostBuildPath } from "../launch/wire.js";
import type { Kind, KindContext, Pass } from "./kind.js";

export interface HostDesired {
  /** The host build the composition names, when it names one. */
  readonly host: HostResource | undefined;
}

export interface HostPlan {
  /** The host build to run (the running one or another: the steps tell them apart). */
  readonly host: HostResource | undefined;
}

type HostPass = Pass<HostDesired, HostPlan>;

/** The build of a resource that is not the one running here, or undefined. */
function other(pass: HostPass, context: KindContext): HostResource | undefined {
  const target = pass.plan.host;
  context.handover.link?.forgetBut(target?.digest);
  if (target === undefined || target.digest === context.handover.running) return undefined;
  return target;
}

const short = (digest: string | undefined): string =>
  digest === undefined ? "the CLI's own" : `${digest.slice(0, 12)}…`;

export const hostKind = {
  name: "host",

  desired(resources: readonly Resource[]): HostDesired {
    const host = resources.find((r): r is HostResource => r.type === "host");
    return { host };
  },

  plan(desired): HostPlan {
    return { host: desired.host };
  },

  check: async (pass: HostPass, context): Promise<void> => {
    const target = other(pass, context);
    if (target === undefined) return;
    const { node, root, handover, signal } = context;
    const running = `this host (mesh ${MESH_VERSION}, build ${short(handover.running)})`;
    const failed = handover.link?.failedReason(target.digest);
    if (failed !== undefined) {
      const message = `host build ${short(target.digest)} did not take ${node} over: ${failed}; ${running} runs on and does not try that build again while the composition names it`;
      pass.fail(HOST_MODULE, new MeshError(ErrorCode.HOST_UPGRADE_FAILED, message, { node }));
      return;
    }
    if (handover.link === undefined) {
      const message = `${node}'s composition names host build ${short(target.digest)}, and ${running} is not run by a launcher (mesh host, mesh join or mesh up), so it cannot hand the node over; run the host as \`mesh host\``;
      pass.fail(HOST_MODULE, new MeshError(ErrorCode.HOST_UPGRADE_FAILED, message, { node }));
      return;
    }
    const dir = hostBuildDir(root, target.digest);
    if (await exists(dir)) return; // unpacked before (a handover asked again)
    const artifacts = context.artifacts();
    try {
      const file = await fetchVerified({
        root,
        module: HOST_MODULE,
        source: target.source,
        digest: target.digest,
        fetch: artifacts === undefined ? undefined : (digest, o) => artifacts.get(digest, o),
        signal,
      });
      await unpackBeside({
        file,
        path: hostBuildPath(root),
        digest: target.digest,
        module: HOST_MODULE,
        limits: context.archiveLimits ?? DEFAULT_ARCHIVE_LIMITS,
      });
    } catch (error) {
      if (artifacts === undefined || isBusTrouble(error)) {
        const why = error instanceof Error ? error.message : String(error);
        pass.waiting.set(HOST_MODULE, {
          code: ErrorCode.BUS_UNAVAILABLE,
          what: `waiting for the bus to fetch host build ${short(target.digest)} (${why.slice(0, 300)})`,
          fix: "nothing to do: the host fetches it again as soon as the bus answers",
        });
      }
      pass.fail(HOST_MODULE, error);
    }
  },

  remove: (): void => undefined, // the launcher removes the builds no one runs

  apply: async (pass: HostPass, context): Promise<void> => {
    const target = other(pass, context);
    const link = context.handover.link;
    if (target === undefined || link === undefined || pass.failed.has(HOST_MODULE)) return;
    const entry = join(hostBuildDir(context.root, target.digest), target.entry);
    if (!(await exists(entry))) {
      const message = `host build ${short(target.digest)} has no file ${JSON.stringify(target.entry)} to run; its manifest's entrypoint and its bundle disagree — build mesh-host again`;
      pass.fail(HOST_MODULE, new MeshError(ErrorCode.ARCHIVE_REFUSED, message));
      return;
    }
    if (context.supervisor.retiring(RUNTIME_PROCESS_ID) !== undefined) {
      pass.waiting.set(HOST_MODULE, {
        code: ErrorCode.HOST_HANDOVER,
        what: `the runtime's own handover drains first; then the host hands ${context.node} over to build ${short(target.digest)}`,
        fix: "nothing to do: it goes on once the old runtime has answered its calls",
      });
      return;
    }
    link.upgrade(target.digest, target.entry);
    pass.waiting.set(HOST_MODULE, {
      code: ErrorCode.HOST_HANDOVER,
      what: `the host hands ${context.node} over to host build ${short(target.digest)}: it boots beside this one and adopts the node's processes`,
      fix: "nothing to do: the new host says it is healthy within a minute, or this one runs on and says why",
    });
  },
} satisfies Kind<HostDesired, HostPlan>;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
