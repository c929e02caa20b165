/**
 * The credential of `mesh mcp`, the Model Context Protocol server an AI agent runs: it discovers
 * tools and calls them, and nothing else (docs/mcp.md). It never holds the operator's grant: an
 * agent that is talked into something can call tools, but not assign, configure or register.
 */
import { createHash } from "node:crypto";
import {
  Bucket,
  ErrorCode,
  MeshError,
  NARROWED_MCP_PREFIX,
  Principal,
  Subject,
  checkName,
  type Permissions,
} from "@mesh/protocol";
import { callAnyTool, inbox, kvGet, kvWatch, merge, toPermissions, type Rights } from "./rights.js";

/**
 * The modules of `mesh mcp --allow`, as a grant names them: each checked, once, sorted. Empty is
 * refused: a credential that may call no tool serves an agent nothing.
 */
export function allowedModules(modules: readonly string[]): string[] {
  if (modules.length === 0) {
    throw new MeshError(
      ErrorCode.USAGE,
      "--allow names no module; name the modules an agent may call, e.g. --allow hello,notes, or leave --allow out for every module",
    );
  }
  return [...new Set(modules.map((m) => checkName("module", m)))].sort();
}

/**
 * The principal of `mesh mcp`: `mcp`, or with `modules` (`--allow`) `mcp-<12 hex of their
 * digest>`, the same for the same set in any order. Each allow-set is its own bus user with its
 * own inbox, so a narrowed credential hears neither the full one's replies nor another set's.
 */
export function mcpPrincipal(modules?: readonly string[]): string {
  if (modules === undefined) return Principal.mcp;
  const digest = createHash("sha256").update(allowedModules(modules).join(",")).digest("hex");
  return `${NARROWED_MCP_PREFIX}${digest.slice(0, 12)}`;
}

/**
 * `mcp` on `node`: calls and discovers every tool, or with `modules` only those modules' tools
 * (their endpoints on any node, and `$SRV.PING`/`$SRV.INFO` of their services), on the inbox of
 * {@link mcpPrincipal} for them. It watches the
 * wants and what each node runs so that it hears at once when a module's tools may have moved,
 * rather than polling discovery. It reads the build records of its modules and the manifests
 * (keyed by digest, so only a manifest whose digest it was told), to offer each module's manifest
 * as an MCP resource; it writes nothing.
 */
export function mcpGrant(input: {
  readonly node: string;
  readonly modules?: readonly string[];
}): Permissions {
  const modules = input.modules === undefined ? undefined : allowedModules(input.modules);
  const tools: Rights[] = modules === undefined ? [callAnyTool()] : modules.map(callModuleTools);
  const builds: Rights[] =
    modules === undefined
      ? [kvGet(Bucket.builds, ">")]
      : modules.map((module) => kvGet(Bucket.builds, `${module}.>`));
  return toPermissions(
    merge(
      ...tools,
      ...builds,
      kvGet(Bucket.manifests, ">"),
      kvWatch(Bucket.wants, ">"),
      kvWatch(Bucket.have, ">"),
      inbox(input.node, mcpPrincipal(modules)),
    ),
  );
}

/** Every tool of `module` on any node, and the discovery of its service. */
function callModuleTools(module: string): Rights {
  return {
    publish: [`${Subject.toolsPrefix}.*.${module}.>`, `$SRV.PING.${module}`, `$SRV.INFO.${module}`],
    subscribe: [],
  };
}
