/**
 * What the runtime provides to a tools bundle instead of the bundle carrying its own copy:
 * `@mesh/sdk` and `zod`, the mesh's own. The worker bootstrap loads them once per worker before
 * any module code (`PROVIDED_MODULES` in @mesh/sdk), so a tools bundle built with this plugin
 * imports them from there: hello's bundle is a few KB instead of 339 KB, and a worker starts
 * without evaluating a second zod.
 *
 * Only the mesh's own copy is provided: a module whose own node_modules resolve `zod` to another
 * version keeps bundling that one. Only tools bundles (those with `loads`) are built this way; a
 * daemon runs outside the runtime and bundles everything.
 */
import { existsSync, realpathSync } from "node:fs";
import { join, sep } from "node:path";
import { pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";

/** The specifiers the runtime provides (PROVIDED_SPECIFIERS in @mesh/sdk). */
const PROVIDED = /^(@mesh\/sdk|zod)$/;

/** The registered symbol the bootstrap puts the provided modules under (PROVIDED_MODULES). */
const PROVIDED_KEY = "mesh.runtime.provided";

/** An esbuild plugin: `@mesh/sdk` and `zod`, where they resolve into `meshModules`, provided. */
export function providedByRuntime(meshModules: readonly string[]): Plugin {
  // The SDK is a workspace link in a checkout: its real folder counts as the mesh's too.
  const roots = meshModules.flatMap((dir) => {
    const sdk = join(dir, "@mesh", "sdk");
    return existsSync(sdk) ? [dir, realpathSync(sdk)] : [dir];
  });
  return {
    name: "mesh-provided-by-runtime",
    setup(build) {
      build.onResolve({ filter: PROVIDED }, async (args) => {
        if ((args.pluginData as { resolving?: boolean } | undefined)?.resolving === true)
          return undefined;
        const found = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          pluginData: { resolving: true },
        });
        const ours = roots.some((dir) => found.path.startsWith(`${dir}${sep}`));
        if (found.errors.length > 0 || !ours) return undefined;
        return {
          path: found.path,
          namespace: "mesh-provided",
          pluginData: { specifier: args.path },
        };
      });
      build.onLoad({ filter: /.*/, namespace: "mesh-provided" }, async (args) => {
        const specifier = (args.pluginData as { specifier: string }).specifier;
        return { contents: await providedSource(specifier, args.path), loader: "js" };
      });
    },
  };
}

/** A module that hands on the provided copy's exports, by the names the mesh's copy has. */
async function providedSource(specifier: string, path: string): Promise<string> {
  const names = Object.keys((await import(pathToFileURL(path).href)) as object);
  const lines = [
    `const provided = globalThis[Symbol.for(${JSON.stringify(PROVIDED_KEY)})];`,
    `const m = provided === undefined ? undefined : provided[${JSON.stringify(specifier)}];`,
    `if (m === undefined) throw new Error(${JSON.stringify(
      `this bundle was built for the mesh's runtime, which provides ${specifier}; it runs only in node-tools`,
    )});`,
  ];
  const exported: string[] = [];
  names.forEach((name, i) => {
    if (name === "default") {
      lines.push(`export default m.default;`);
    } else if (/^[A-Za-z_$][\w$]*$/.test(name)) {
      lines.push(`const e${i} = m[${JSON.stringify(name)}];`);
      exported.push(`e${i} as ${name}`);
    }
  });
  lines.push(`export { ${exported.join(", ")} };`);
  return lines.join("\n");
}
