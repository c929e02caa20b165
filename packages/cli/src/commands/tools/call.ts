/**
 * `mesh call <module>/<tool> [--node N] [--timeout MS] '<json>'`: calls a tool and prints its
 * result, or its coded error (exit code non-zero). Without `--node`, the one node that serves the
 * tool is found through discovery.
 */
import { discoverTools, request, type MeshBus } from "@mesh/bus";
import { CallHeader, ErrorCode, MeshError, checkName, toolSubject } from "@mesh/protocol";
import { Option, type Command } from "commander";
import { connectToMesh, type FindMeshOptions } from "../../find-mesh.js";
import { ExitCode, printJson } from "../../output.js";
import { act, meshOptions, positiveNumber } from "../../verb.js";

export interface CallOptions extends FindMeshOptions {
  readonly node?: string;
  /** The call's deadline, also sent to the runtime as `Mesh-Timeout-Ms`. */
  readonly timeout?: number;
  readonly json?: boolean;
}

export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/**
 * The longest deadline a call may ask for: an hour (the runtime grants at most its own maximum
 * anyway). Without a bound, 1e12 overflowed the timer and failed at once with a TIMEOUT.
 */
export const MAX_CALL_TIMEOUT_MS = 3_600_000;

export async function call(
  target: string,
  input: string | undefined,
  options: CallOptions,
): Promise<ExitCode> {
  const { module, tool } = parseTarget(target);
  const body = parseInput(input);
  await using bus = await connectToMesh(options);
  const node = options.node ?? (await nodeServing(bus, module, tool));
  const timeoutMs = options.timeout ?? DEFAULT_CALL_TIMEOUT_MS;
  const result = await request(bus, toolSubject(node, module, tool), body, {
    // The runtime's deadline a little inside ours, so its TIMEOUT arrives rather than our own.
    timeoutMs: timeoutMs + 1_000,
    headers: { [CallHeader.timeoutMs]: String(timeoutMs) },
  });
  if (options.json === true) printJson({ ok: true, node, module, tool, result });
  else printJson(result);
  return ExitCode.ok;
}

function parseTarget(target: string): { module: string; tool: string } {
  const slash = target.indexOf("/");
  if (slash <= 0 || slash === target.length - 1) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${JSON.stringify(target)} names no tool; write <module>/<tool>, e.g. hello/greet (\`mesh tools\` lists them)`,
    );
  }
  return {
    module: checkName("module", target.slice(0, slash)),
    tool: checkName("tool", target.slice(slash + 1)),
  };
}

function parseInput(input: string | undefined): unknown {
  if (input === undefined) return {};
  try {
    return JSON.parse(input) as unknown;
  } catch (error) {
    throw new MeshError(
      ErrorCode.USAGE,
      `the input ${JSON.stringify(input)} is not JSON (${(error as Error).message}); quote it for the shell, e.g. '{"name":"Ada"}'`,
      { cause: error },
    );
  }
}

/** The one node serving `module/tool`; NOT_FOUND for none, USAGE when several could be meant. */
async function nodeServing(bus: MeshBus, module: string, tool: string): Promise<string> {
  const nodes = (await discoverTools(bus))
    .filter((t) => t.module === module && t.tool === tool)
    .map((t) => t.node);
  const unique = [...new Set(nodes)].sort();
  if (unique.length === 1 && unique[0] !== undefined) return unique[0];
  if (unique.length === 0) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no node serves ${module}/${tool}; \`mesh tools --module ${module}\` lists what ${module} serves, and \`mesh status\` where it runs`,
      { module },
    );
  }
  throw new MeshError(
    ErrorCode.USAGE,
    `${module}/${tool} is served on ${unique.join(", ")}; say which with --node`,
    { module },
  );
}

export function registerCallVerb(program: Command): void {
  act(
    meshOptions(
      program
        .command("call")
        .description("Call a tool and print its result, or its coded error.")
        .argument("<module/tool>", "the tool, e.g. hello/greet")
        .argument("[input]", "the input as JSON (default {})")
        .option("--node <name>", "the node to call it on (default: the one node that serves it)")
        .addOption(
          new Option(
            "--timeout <ms>",
            `the call's deadline in milliseconds (default ${DEFAULT_CALL_TIMEOUT_MS})`,
          ).argParser(positiveNumber("--timeout", "5000", MAX_CALL_TIMEOUT_MS)),
        ),
      "print the result as JSON with ok, node, module and tool",
    ),
    call,
  );
}
