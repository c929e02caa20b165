/**
 * Finding the tools served on the bus through `$SRV` discovery: every service answers `$SRV.INFO`
 * with its endpoints and their metadata, and an endpoint under `mesh.tools.<node>.<module>.<tool>`
 * is a tool. The runtime puts a tool's description and its input and output JSON Schemas in the
 * endpoint's metadata (strings only, so the schemas are JSON text), under `description`, `input`
 * and `output`.
 */
import { Svcm, type ServiceInfo } from "@nats-io/services";
import { ErrorCode, Subject, parseToolSubject, type ServedTool } from "@mesh/protocol";
import type { MeshBus } from "./mesh-bus.js";
import { abortable, toMeshError } from "./bus-errors.js";
import { natsOf } from "./mesh-bus.js";

/** Where a tool's endpoint metadata keeps what a caller needs to know. */
export const ToolMetadata = {
  description: "description",
  /** The input's JSON Schema, as JSON text. */
  input: "input",
  /** The output's JSON Schema, as JSON text. */
  output: "output",
} as const;

/** One tool as discovery found it on one node. */
export interface DiscoveredTool extends ServedTool {
  /** The service (one per module and node) and its instance. */
  readonly service: { readonly name: string; readonly id: string; readonly version: string };
}

export interface DiscoverOptions {
  /** How long to collect answers at most; discovery stops earlier once answers stop coming. */
  readonly maxWaitMs?: number;
  readonly signal?: AbortSignal;
  /**
   * Ask only the services of this module (`$SRV.INFO.<module>`): what a credential granted some
   * modules' tools may ask, where mesh-wide `$SRV.INFO` is refused.
   */
  readonly module?: string;
}

/**
 * Asks every service for its info and returns the tools among their endpoints, sorted by module,
 * tool and node. No service answering is an empty list, not an error.
 */
export async function discoverTools(
  bus: MeshBus,
  options: DiscoverOptions = {},
): Promise<DiscoveredTool[]> {
  const doing = "discovering the tools on the bus ($SRV.INFO)";
  const infos: ServiceInfo[] = [];
  try {
    const client = new Svcm(natsOf(bus).nc).client({
      strategy: "stall",
      stall: 300,
      maxWait: options.maxWaitMs ?? 2_000,
    });
    const replies = await abortable(client.info(options.module), options.signal, doing);
    await abortable(
      (async () => {
        for await (const info of replies) infos.push(info);
      })(),
      options.signal,
      doing,
    );
  } catch (error) {
    const mapped = toMeshError(error, { doing, subject: "$SRV.INFO" });
    // No responders: nothing serves anything yet.
    if (mapped.code === ErrorCode.NOT_FOUND) return [];
    throw mapped;
  }
  const tools: DiscoveredTool[] = [];
  for (const info of infos) {
    for (const endpoint of info.endpoints ?? []) {
      if (!endpoint.subject.startsWith(`${Subject.toolsPrefix}.`)) continue;
      let where: { node: string; module: string; tool: string };
      try {
        where = parseToolSubject(endpoint.subject);
      } catch {
        continue;
      }
      // A service may call itself anything; only its own module's subjects are the runtime's to serve.
      if (where.module !== info.name) continue;
      const metadata = endpoint.metadata ?? {};
      const problems: string[] = [];
      const schema = (key: "input" | "output"): unknown => {
        const text = metadata[ToolMetadata[key]];
        if (text === undefined || text === "") return undefined;
        try {
          return JSON.parse(text) as unknown;
        } catch (error) {
          problems.push(
            `the ${key} schema in the endpoint's metadata is not JSON (${(error as Error).message})`,
          );
          return undefined;
        }
      };
      tools.push({
        ...where,
        subject: endpoint.subject,
        description: metadata[ToolMetadata.description] ?? "",
        input: schema("input"),
        output: schema("output"),
        service: { name: info.name, id: info.id, version: info.version },
        problems,
      });
    }
  }
  return tools.sort(
    (a, b) =>
      a.module.localeCompare(b.module) ||
      a.tool.localeCompare(b.tool) ||
      a.node.localeCompare(b.node),
  );
}
