/**
 * Waits until each of the given modules is reported `healthy` on the node, showing progress as the
 * reports arrive (built, wanted, starting, healthy), and says plainly what is stuck when it takes
 * too long.
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError, nodeModuleKey, parseNodeModuleKey } from "@mesh/protocol";

export interface WaitHealthyOptions {
  readonly node: string;
  readonly modules: readonly string[];
  readonly timeoutMs: number;
  /** Reports written before this are from an earlier run and do not count. */
  readonly since: Date;
  readonly signal: AbortSignal;
  readonly say: (line: string) => void;
}

export async function waitHealthy(bus: MeshBus, options: WaitHealthyOptions): Promise<void> {
  const have = await KvBucket.open(bus, Bucket.have);
  const health = new Map<string, string>(options.modules.map((m) => [m, "not yet reported"]));
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), options.timeoutMs);
  const onAbort = () => stop.abort();
  options.signal.addEventListener("abort", onAbort, { once: true });
  const show = () =>
    options.say(`waiting for the modules: ${[...health].map(([m, h]) => `${m} ${h}`).join(", ")}`);
  let last = "";
  try {
    for await (const event of have.watch({ key: `${options.node}.*`, signal: stop.signal })) {
      // A report from before this run (the last one of an earlier `mesh up`) says nothing of now.
      if (event.type === "put" && event.created >= options.since) {
        const { module } = parseNodeModuleKey(event.key);
        if (health.has(module)) {
          health.set(
            module,
            event.value.health +
              (event.value.lastError === undefined ? "" : ` (${event.value.lastError})`),
          );
        }
      }
      if (event.type === "put" || event.type === "current") {
        const now = [...health.values()].join(",");
        if (now !== last) show();
        last = now;
        if ([...health.values()].every((h) => h === "healthy")) return;
      }
    }
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", onAbort);
  }
  if (options.signal.aborted)
    throw new MeshError(ErrorCode.ABORTED, "stopped while waiting for the modules");
  const stuck = [...health]
    .filter(([, h]) => h !== "healthy")
    .map(([m, h]) => `${nodeModuleKey(options.node, m)}: ${h}`);
  throw new MeshError(
    ErrorCode.TIMEOUT,
    `these modules are not healthy after ${Math.round(options.timeoutMs / 1000)} s: ${stuck.join("; ")}. ` +
      "See `mesh builds`, `mesh differences` and the logs under the root's logs folder.",
  );
}
