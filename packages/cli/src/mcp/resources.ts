/**
 * The resources `mesh mcp` offers beside the tools, two per module it serves: the module's
 * manifest (the build its tools are served by, as the builder stored it) and a page that says in
 * words what the module offers (its description and each tool's description and schemas). An
 * agent reads them to learn a module before calling it. They follow the catalogue: a module
 * assigned or gone changes the list and the server says `notifications/resources/list_changed`.
 * One more stands whatever is served: `mesh://rollouts`, every module's rollout (issue 22).
 */
import { KvBucket, type CallOptions, type MeshBus } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError } from "@mesh/protocol";
import { readRollouts } from "../commands/rollout/rollout-status.js";
import { readConfigRollouts } from "../commands/rollout/config-rollout-status.js";
import type { CatalogueTool } from "./tool-catalogue.js";

/** Every module's rollout, as `mesh rollout status --json` gives them. */
export const ROLLOUTS_URI = "mesh://rollouts";

/** `mesh://modules/<module>/<kind>`. */
export const RESOURCE_PREFIX = "mesh://modules/";
export const ResourceKind = { manifest: "manifest", tools: "tools" } as const;
export type ResourceKind = (typeof ResourceKind)[keyof typeof ResourceKind];

export interface ListedResource {
  readonly uri: string;
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly mimeType: string;
}

export interface ReadResource {
  readonly uri: string;
  readonly mimeType: string;
  readonly text: string;
}

export const resourceUri = (module: string, kind: ResourceKind): string =>
  `${RESOURCE_PREFIX}${module}/${kind}`;

/** The modules of the catalogue, each with its tools, sorted by module. */
function byModule(tools: readonly CatalogueTool[]): Map<string, CatalogueTool[]> {
  const modules = new Map<string, CatalogueTool[]>();
  for (const tool of tools) modules.set(tool.module, [...(modules.get(tool.module) ?? []), tool]);
  return new Map([...modules.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const ROLLOUTS_RESOURCE: ListedResource = {
  uri: ROLLOUTS_URI,
  name: "rollouts",
  title: "Rollouts",
  description:
    "Every module's rollout of a new build: build, status, wave, nodes healthy, starting, failing and waiting, what it waits for (JSON)",
  mimeType: "application/json",
};

export function listResources(tools: readonly CatalogueTool[]): ListedResource[] {
  return [ROLLOUTS_RESOURCE, ...listModuleResources(tools)];
}

function listModuleResources(tools: readonly CatalogueTool[]): ListedResource[] {
  return [...byModule(tools).keys()].flatMap((module) => [
    {
      uri: resourceUri(module, ResourceKind.manifest),
      name: `${module}-manifest`,
      title: `${module}: manifest`,
      description: `The manifest of the ${module} build whose tools are served (JSON)`,
      mimeType: "application/json",
    },
    {
      uri: resourceUri(module, ResourceKind.tools),
      name: `${module}-tools`,
      title: `${module}: what it offers`,
      description: `What ${module} does and each of its tools, with their input and output schemas`,
      mimeType: "text/markdown",
    },
  ]);
}

/** Reads one resource; a URI that names no served module is NOT_FOUND with what is served. */
export async function readResource(
  bus: MeshBus,
  tools: readonly CatalogueTool[],
  uri: string,
  options: CallOptions = {},
): Promise<ReadResource> {
  if (uri === ROLLOUTS_URI) {
    const rollouts = await readRollouts(bus);
    const configRollouts = await readConfigRollouts(bus);
    return {
      uri,
      mimeType: "application/json",
      text: `${JSON.stringify({ rollouts, configRollouts }, null, 2)}\n`,
    };
  }
  const modules = byModule(tools);
  const [module, kind] = uri.startsWith(RESOURCE_PREFIX)
    ? uri.slice(RESOURCE_PREFIX.length).split("/")
    : [];
  const served = module === undefined ? undefined : modules.get(module);
  if (served === undefined || (kind !== ResourceKind.manifest && kind !== ResourceKind.tools)) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no resource ${JSON.stringify(uri)}; resources/list names them: ${RESOURCE_PREFIX}<module>/manifest or /tools for ${[...modules.keys()].join(", ") || "no module (none serves tools now)"}`,
    );
  }
  if (kind === ResourceKind.tools) {
    return { uri, mimeType: "text/markdown", text: toolsPage(module as string, served) };
  }
  const manifest = await manifestOf(bus, module as string, served, options);
  return { uri, mimeType: "application/json", text: `${JSON.stringify(manifest, null, 2)}\n` };
}

/** The build a module's service names as its version: `0.0.0+<build>`. */
function buildOf(tool: CatalogueTool): string | undefined {
  const plus = tool.version.indexOf("+");
  return plus < 0 ? undefined : tool.version.slice(plus + 1);
}

async function manifestOf(
  bus: MeshBus,
  module: string,
  served: readonly CatalogueTool[],
  options: CallOptions,
): Promise<unknown> {
  const build = served.map(buildOf).find((b) => b !== undefined);
  if (build === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module}'s service does not say its build (version ${JSON.stringify(served[0]?.version)}); a runtime of this mesh version says 0.0.0+<build>`,
    );
  }
  const record = await (await KvBucket.open(bus, Bucket.builds)).get(`${module}.${build}`, options);
  const digest = record?.value.manifestDigest;
  if (digest === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `build ${build} of ${module} has no stored manifest (its build record is ${record === undefined ? "gone" : record.value.status}); \`mesh builds ${module}\` shows its builds`,
    );
  }
  const manifest = await (await KvBucket.open(bus, Bucket.manifests)).get(digest, options);
  if (manifest === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `the manifest ${digest} of ${module} build ${build} is not stored; \`mesh builds ${module}\` shows its builds`,
    );
  }
  return manifest.value;
}

/** A page in words: what the module is and each tool with its schemas. */
export function toolsPage(module: string, tools: readonly CatalogueTool[]): string {
  const first = tools[0];
  const lines = [
    `# ${module}`,
    "",
    `Served on ${first?.nodes.join(", ") ?? "no node"}, version ${first?.version ?? "unknown"}.`,
    "",
  ];
  for (const tool of tools) {
    lines.push(
      `## ${tool.name}`,
      "",
      tool.description === "" ? "(no description)" : tool.description,
    );
    lines.push("", "Input:", "", "```json", JSON.stringify(tool.input ?? {}, null, 2), "```");
    lines.push("", "Output:", "", "```json", JSON.stringify(tool.output ?? {}, null, 2), "```", "");
  }
  return `${lines.join("\n")}\n`;
}
