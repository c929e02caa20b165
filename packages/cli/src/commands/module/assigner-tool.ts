/**
 * Calling the assigner's tools (decision 0190): `mesh put` and `mesh unput` (and the view's put
 * actions) ask `mesh-assigner/put` and `mesh-assigner/unput`, which the runtime serves on the
 * node that runs delivery from the assigner's tools bundle; they write the puts and refuse with a
 * code, as any tool does. The node is found as `mesh call` finds one (discovery of the module's
 * service); while delivery moves two may serve it, and either answers. None serving is NOT_FOUND,
 * saying where the tool should be.
 */
import { discoverTools, request, type MeshBus } from "@mesh/bus";
import {
  CallHeader,
  ErrorCode,
  MeshError,
  MeshPart,
  isMeshError,
  toolSubject,
} from "@mesh/protocol";

/** How long a call of the assigner's tool may take (its bucket writes are quick). */
const ASSIGNER_TOOL_TIMEOUT_MS = 15_000;

export async function callAssignerTool(
  bus: MeshBus,
  tool: "put" | "unput",
  input: Record<string, unknown>,
): Promise<unknown> {
  const nodes = [
    ...new Set(
      (await discoverTools(bus, { module: MeshPart.assigner }))
        .filter((t) => t.tool === tool)
        .map((t) => t.node),
    ),
  ].sort();
  for (const node of nodes) {
    try {
      return await request(bus, toolSubject(node, MeshPart.assigner, tool), input, {
        timeoutMs: ASSIGNER_TOOL_TIMEOUT_MS + 1_000,
        headers: { [CallHeader.timeoutMs]: String(ASSIGNER_TOOL_TIMEOUT_MS) },
      });
    } catch (error) {
      // A coded reply is the tool's answer; a failure with a cause is the bus's (the runtime
      // that served it there is being replaced): another node may serve it.
      const busTrouble =
        isMeshError(error) &&
        error.cause !== undefined &&
        (error.code === ErrorCode.NOT_FOUND || error.code === ErrorCode.TIMEOUT);
      if (!busTrouble || node === nodes.at(-1)) throw error;
    }
  }
  throw new MeshError(
    ErrorCode.NOT_FOUND,
    `no node serves ${MeshPart.assigner}/${tool}: its tools are served by node-tools where delivery runs; ` +
      `see \`mesh status\` (is ${MeshPart.assigner} running, and node-tools on its node?), and run ` +
      `\`mesh up\` (or \`mesh up --delivery-on <node>\`) to start delivery`,
    { module: MeshPart.assigner },
  );
}
