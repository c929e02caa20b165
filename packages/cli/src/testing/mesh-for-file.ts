/**
 * One mesh from `mesh up` for a test file: a temporary root and a folder for module sources,
 * the mesh up before the file's tests and stopped, with both folders removed, after them.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { freePort, standIn } from "@mesh/bus/testing";
import { DemoMesh } from "./demo-mesh.js";

/** Filled in by the file's `before`: read it inside the tests, never at the file's top level. */
export interface MeshForFile {
  readonly mesh: DemoMesh;
  readonly root: string;
  /** A folder for the modules the file writes. */
  readonly sources: string;
}

/**
 * Registers the file's `before` (up) and `after` (stop, remove); what it made is read from what
 * it returns once the mesh is up. `prefix` names the temporary folders; `demo: false` runs
 * `mesh up` without `--demo`.
 */
export function meshForFile(options: {
  readonly prefix: string;
  readonly node: string;
  readonly demo?: boolean;
}): MeshForFile {
  let mesh: DemoMesh | undefined;
  let made: MeshForFile | undefined;
  const folders: string[] = [];
  before(async () => {
    const root = await mkdtemp(join(tmpdir(), `${options.prefix}-`));
    folders.push(root);
    const sources = await mkdtemp(join(tmpdir(), `${options.prefix}-src-`));
    folders.push(sources);
    mesh = new DemoMesh({
      root,
      port: await freePort(),
      node: options.node,
      ...(options.demo === undefined ? {} : { demo: options.demo }),
    });
    await mesh.up();
    made = { mesh, root, sources };
  });
  after(async () => {
    await mesh?.stop();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  return standIn("meshForFile", () => made);
}
