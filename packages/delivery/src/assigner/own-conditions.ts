/**
 * The conditions the assigner said before (a restart, say) that are still open, read back from
 * the stream once before the first pass, so that pass resolves those whose cause has ended. Not
 * heard within the deadline: logged, and only what this run says is resolved later.
 */
import { readStream, type MeshBus } from "@mesh/bus";
import { Condition, Stream, Subject } from "@mesh/protocol";

/** How long the start waits to read back its own conditions. */
const OWN_CONDITIONS_DEADLINE_MS = 10_000;

export async function readOwnConditions(
  bus: MeshBus,
  open: Map<string, { node: string }>,
  options: { signal: AbortSignal; log: (line: string) => void },
): Promise<void> {
  const { signal } = options;
  // Ends the read at the stop, at the deadline, or once what stands was handed.
  const done = new AbortController();
  const read = AbortSignal.any([
    signal,
    AbortSignal.timeout(OWN_CONDITIONS_DEADLINE_MS),
    done.signal,
  ]);
  try {
    for await (const e of readStream(bus, Stream.conditions, {
      // One filter, as its grant reads it: every condition the assigner says (as its credential's module).
      filter: `${Subject.conditionsPrefix}.${bus.credential.module}.>`,
      schema: Condition,
      deliver: "last-per-subject",
      signal: read,
    })) {
      if (e.type === "current") return;
      if (e.type !== "message" || e.value.node === undefined) continue;
      if (e.value.resolved === true) open.delete(e.value.name);
      else open.set(e.value.name, { node: e.value.node });
    }
  } catch (error) {
    if (!signal.aborted) {
      options.log(
        `its own conditions could not be read back (${(error as Error).message}); those said before this start stay as they are`,
      );
    }
  } finally {
    done.abort();
  }
}
