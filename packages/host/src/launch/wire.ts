/**
 * What a host launcher and the host builds it runs say to each other (decision 0200): the
 * environment a build is started with, and the messages on its IPC channel. The launcher stays on
 * a machine for months while host builds come and go, so this is a contract between versions:
 * a field or a message may be added, none changed or removed; each side ignores what it does not
 * know.
 *
 * A handover, as the launcher L runs it between the host running (old) and the build to run (new):
 *
 *     old → L   upgrade {digest, entry}     the build is unpacked and verified; hand over to it
 *     L         starts new with standby=1
 *     new → L   standby-ready {version}     loaded; it touches nothing until told
 *     L → old   park                        let go of the node: stop watching, leave every process
 *     old → L   parked                      nothing of the node is held
 *     L → new   take-over                   adopt the node's processes from the saved state
 *     new → L   healthy                     adopted, on the bus, composition applied
 *     L → old   exit                        done; the launcher runs new from now on
 *
 * Any step that fails or passes its deadline ends the new build (SIGKILL: its processes are the
 * node's and stay) and tells the old one `resume` with why, or `not-upgraded` when it had not
 * parked yet: it adopts the processes again (or never let go) and says a condition naming the build.
 */
import { z } from "zod";

/** The environment of a host build the launcher starts. */
export const LaunchEnv = {
  /** "1": a launcher started this process, and its IPC channel is the launcher's. */
  launched: "MESH_HOST_LAUNCHED",
  /** The digest of the build this process runs; absent for the CLI's own build of no known digest. */
  build: "MESH_HOST_BUILD",
  /** "1": a standby: load, say `standby-ready`, and touch nothing until `take-over`. */
  standby: "MESH_HOST_STANDBY",
  /** JSON `[{digest, reason}]`: builds that did not take this node over; not tried again. */
  failed: "MESH_HOST_FAILED",
} as const;

/** A build that did not take the node over, and why. */
export const FailedBuild = z.object({ digest: z.string().min(1), reason: z.string() });
export type FailedBuild = z.infer<typeof FailedBuild>;

/** What a host build says to its launcher. */
export const FromHost = z.discriminatedUnion("t", [
  /** Running: adopted what it found and applied what it kept (every start, also a resume). */
  z.object({ t: z.literal("running") }),
  /** Hand the node over to this build, unpacked at `<root>/host/.build@<digest>`. */
  z.object({ t: z.literal("upgrade"), digest: z.string().min(1), entry: z.string().min(1) }),
  /** A standby: loaded and waiting; `version` is its mesh version. */
  z.object({ t: z.literal("standby-ready"), version: z.string() }),
  /** Let go of the node (after `park`). */
  z.object({ t: z.literal("parked") }),
  /** Took the node over and is healthy (after `take-over`). */
  z.object({ t: z.literal("healthy") }),
  /** The composition no longer names this failed build: it may be tried again when it does. */
  z.object({ t: z.literal("forget"), digest: z.string().min(1) }),
]);
export type FromHost = z.infer<typeof FromHost>;

/** What the launcher says to a host build. */
export const FromLauncher = z.discriminatedUnion("t", [
  z.object({ t: z.literal("park") }),
  z.object({ t: z.literal("take-over") }),
  z.object({ t: z.literal("exit") }),
  /** Take the node again (after `park`); `failed`: the build that did not take it over. */
  z.object({ t: z.literal("resume"), failed: FailedBuild.optional() }),
  /** The handover did not begin (the new build did not boot): nothing was let go of. */
  z.object({ t: z.literal("not-upgraded"), failed: FailedBuild }),
]);
export type FromLauncher = z.infer<typeof FromLauncher>;

/** Where a host build of `digest` is unpacked under the host's root. */
export const hostBuildDir = (root: string, digest: string): string =>
  `${root.replace(/\/+$/, "")}/host/.build@${digest}`;

/** The path the host unpacks builds beside (`unpackBeside` makes `.build@<digest>` next to it). */
export const hostBuildPath = (root: string): string => `${root.replace(/\/+$/, "")}/host/build`;

/** A message of `schema`, or undefined for one this side does not know (a newer peer's). */
export function readMessage<T>(schema: z.ZodType<T>, message: unknown): T | undefined {
  const parsed = schema.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}
