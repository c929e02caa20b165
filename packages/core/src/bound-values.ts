/**
 * The values the mesh derives for a module (docs/design.md "The host": bound), which the
 * controller composes for each module on a node and its host answers: the node, the bus's
 * urls, the bucket of each state it keeps and reads, the subject of each tool it calls, and for a
 * mesh part the mesh's buckets its manifest reads and writes (decision 0190).
 */
import {
  BoundKey,
  MESH_OWNER,
  Subject,
  meshBucketOf,
  stateBucket,
  type ComposedModule,
  type Manifest,
} from "@mesh/protocol";

export function boundValues(
  node: string,
  m: Manifest,
  servers: readonly string[],
): ComposedModule["bound"] {
  const bound: Record<string, string | string[]> = {
    [BoundKey.node]: node,
    [BoundKey.servers]: [...servers],
  };
  for (const s of m.states) bound[BoundKey.state(s.name)] = stateBucket(m.module, s.name);
  for (const read of m.reads) {
    const [owner, state] = read.split("/") as [string, string];
    // A mesh part's `mesh/<name>` is one of the mesh's own buckets (decision 0190); the object
    // store and the streams it names are no bucket a module's code opens.
    const bucket = owner === MESH_OWNER ? meshBucketOf(read) : stateBucket(owner, state);
    if (bucket !== undefined) bound[BoundKey.read(owner, state)] = bucket;
  }
  for (const write of m.writes ?? []) {
    const bucket = meshBucketOf(write);
    const [owner, state] = write.split("/") as [string, string];
    if (bucket !== undefined) bound[BoundKey.write(owner, state)] = bucket;
  }
  for (const call of m.calls) {
    const [callee, tool] = call.split("/") as [string, string];
    bound[BoundKey.call(callee, tool)] = `${Subject.toolsPrefix}.*.${callee}.${tool}`;
  }
  const out: Record<string, string | string[]> = {};
  for (const key of Object.keys(bound).sort()) out[key] = bound[key] as string | string[];
  return out;
}
