import { isAbsolute, resolve } from "node:path";
import { Env, ErrorCode, MeshError, checkName } from "@mesh/protocol";

/**
 * Reads `MESH_TOOL_MODULES`: `<module>=<path>` entries, comma-separated, several of which may
 * name one module. Returns each module's entries in the order given, as absolute paths.
 */
export function parseToolModules(
  text: string,
  options: { cwd?: string } = {},
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const eq = entry.indexOf("=");
    if (eq <= 0 || eq === entry.length - 1) {
      throw new MeshError(
        ErrorCode.USAGE,
        `${Env.toolModules} holds ${JSON.stringify(entry)}, which is not <module>=<path>; the host composes it as every served module's <module>=<bundle path>/<load>, comma-separated`,
      );
    }
    const module = checkName("module", entry.slice(0, eq));
    const path = entry.slice(eq + 1);
    const absolute = isAbsolute(path) ? path : resolve(options.cwd ?? process.cwd(), path);
    const entries = out.get(module) ?? [];
    entries.push(absolute);
    out.set(module, entries);
  }
  return out;
}
