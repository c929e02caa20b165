/**
 * Where the CLI finds what ships beside it. In the repository that is tsc's output
 * (`packages/cli/dist/…`), the runtime module in `packages/runtime/node-tools` and the examples in
 * `examples/modules`. In the packed CLI (`npm run pack`) the CLI is one bundle in `dist/` and the
 * runtime module and examples are folders of the package; the packer defines `MESH_PACKED` as
 * "1" at build time, so the choice is made once, when the bundle is made.
 */
import { fileURLToPath } from "node:url";

const PACKED = process.env["MESH_PACKED"] === "1";

const here = (repo: string, packed: string): string =>
  fileURLToPath(new URL(PACKED ? packed : repo, import.meta.url));

/** The file that is the `mesh` command: every process `mesh up` starts runs it with a verb. */
export const CLI_MAIN = here("./main.js", "./mesh.js");

/** The shipped runtime module's source (`node-tools`). */
export const NODE_TOOLS_SOURCE = here("../../runtime/node-tools", "../node-tools");

/** The folder of delivery's parts' manifests (`mesh-assigner`, …; decision 0122). */
export const PARTS_SOURCE = here("../../delivery/parts", "../parts");

/**
 * The mesh's parts as prebuilt archives with their builds (decision 0190), which `mesh up`
 * registers: made by `npm run build` (scripts/parts-bundle.js) beside tsc's output, and copied
 * into the packed CLI by `npm run pack`.
 */
export const SHIPPED_PARTS = here("./shipped-parts", "../shipped-parts");

/** The folder of the examples `mesh up --demo` runs. */
export const EXAMPLES_DIR = here("../../../examples/modules", "../examples/modules");
