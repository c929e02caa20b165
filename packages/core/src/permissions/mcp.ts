/**
 * The credential of `mesh mcp`, the Model Context Protocol server an AI agent runs: it discovers
 * tools and calls them, and nothing else (docs/mcp.md). It never holds the operator's grant: an
 * agent that is talked into something can call tools, but not assign, configure or register.
 */
import { Bucket, Principal, Subject, checkName, type Permissions } from "@mesh/protocol";
import { callAnyTool, inbox, kvGet, kvWatch, merge, toPermissions, type Rights } from "./rights.js";

/**
 * `mcp` on `node`: calls and discovers every tool, or with `modules` only those modules' tools
 * (their endpoints on any node, and `$SRV.PING`/`$SRV.INFO` of their services). It watches the
 * wants and what each node runs so that it hears at once when a module's tools may have moved,
 * rather than polling discovery. It reads the build records of its modules and the manifests
 * (keyed by digest, so only a manifest whose digest it was told), to offer each module's manifest
 * as an MCP resource; it writes nothing.
 */
export function mcpGrant(input: {
  readonly node: string;
  readonly modules?: readonly string[];
}): Permissions {
  const tools: Rights[] =
    input.modules === undefined ? [callAnyTool()] : input.modules.map(callModuleTools);
  const builds: Rights[] =
    input.modules === undefined
      ? [kvGet(Bucket.builds, ">")]
      : input.modules.map((module) => kvGet(Bucket.builds, `${module}.>`));
  return toPermissions(
    merge(
      ...tools,
      ...builds,
      kvGet(Bucket.manifests, ">"),
      kvWatch(Bucket.wants, ">"),
      kvWatch(Bucket.have, ">"),
      inbox(input.node, Principal.mcp),
    ),
  );
}

/** Every tool of `module` on any node, and the discovery of its service. */
function callModuleTools(module: string): Rights {
  checkName("module", module);
  return {
    publish: [`${Subject.toolsPrefix}.*.${module}.>`, `$SRV.PING.${module}`, `$SRV.INFO.${module}`],
    subscribe: [],
  };
}
