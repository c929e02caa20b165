/**
 * The rules of `mesh/<name>` in a manifest's `reads` and `writes` (decision 0122): only the mesh's
 * own parts name the mesh's buckets, each name is one the mesh has, and a name is read or written
 * only as the mesh allows it (the conditions stream is read, the build modules' asks are written).
 */
import { MESH_OWNER, MESH_PARTS, MESH_RESOURCES } from "@mesh/protocol";
import { problem, quote, type ManifestProblem } from "../manifest-problem.js";
import { oneOf } from "../suggest.js";
import { listOf } from "./shared.js";

const PREFIX = `${MESH_OWNER}/`;

/** Every problem of the manifest's `mesh/…` entries in `reads` and `writes`. */
export function meshRefProblems(
  module: string | undefined,
  reads: unknown,
  writes: unknown,
): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  for (const [field, direction] of [
    ["reads", "read"],
    ["writes", "write"],
  ] as const) {
    listOf(field === "reads" ? reads : writes).forEach((ref, index) => {
      if (typeof ref !== "string" || !ref.startsWith(PREFIX)) return;
      const found = refProblem(module, ref, direction);
      if (found !== undefined)
        out.push(problem(found.code, [field, index], { value: ref }, found.message, found.fix));
    });
  }
  return out;
}

function refProblem(
  module: string | undefined,
  ref: string,
  direction: "read" | "write",
): Pick<ManifestProblem, "code" | "message" | "fix"> | undefined {
  if (module === undefined || !MESH_PARTS.has(module)) {
    return {
      code: "mesh-part-only",
      message: `${quote(ref)} is one of the mesh's own buckets, and ${quote(module)} is not one of the mesh's parts`,
      fix: `leave it out: only ${oneOf([...MESH_PARTS].sort())} name the mesh's buckets; a module reads other modules' states as "<module>/<state>"`,
    };
  }
  const name = ref.slice(PREFIX.length);
  const resource = MESH_RESOURCES.get(name);
  if (resource === undefined) {
    return {
      code: "mesh-resource-known",
      message: `the mesh has no bucket, store or stream named ${quote(name)}`,
      fix: `name one of ${oneOf([...MESH_RESOURCES.keys()].sort().map((n) => PREFIX + n))}`,
    };
  }
  if (resource.may !== "read-write" && resource.may !== direction) {
    return {
      code: "mesh-resource-direction",
      message: `${quote(ref)} is ${resource.may === "read" ? "read, never written" : "written, never read"} by a part`,
      fix: `move it to ${resource.may === "read" ? "reads" : "writes"}`,
    };
  }
  return undefined;
}
