/** Where the mesh's own SDK is, for the build modules that pack parts of it (python, go). */
import { existsSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `@mesh/sdk`'s folder, found as the TypeScript builder finds the SDK: the node_modules above
 * this file that holds it (import.meta.resolve does not survive the CLI's bundling).
 */
export function sdkRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", "@mesh", "sdk");
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(dir) === dir)
      throw new Error("@mesh/sdk is not installed beside the mesh: reinstall the mesh");
  }
}
