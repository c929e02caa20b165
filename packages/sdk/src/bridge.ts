/**
 * `@mesh/sdk/bridge`: the process a Python module's daemon runs under (decision 0161). The
 * python build module bundles it into each python bundle as `.mesh/bridge.mjs`, and a process
 * of the bundle runs `node .mesh/bridge.mjs python3 <entry>`: the bridge connects with the
 * module's credential (`MESH_BROKER_FILE`), opens a Unix socket of its own (mode 0600, in a
 * folder only the process's user can enter), starts the program with `MESH_API_SOCKET` naming
 * it, and answers the program's asks in JSON lines: config (live), states, conditions, keeps,
 * calls, and the tools it serves, which the bridge serves on the bus as the module's NATS service
 * (`mesh.tools.<node>.<module>.<tool>`, `$SRV` discovery) and forwards. It exits as the program
 * exits; SIGTERM and SIGINT are handed to the program.
 *
 * Without a credential (a module that declares no `broker`), it only runs the program.
 */
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { MeshBus } from "@mesh/bus";
import { Env } from "@mesh/protocol";
import { processMeshOver } from "./process.js";
import { BridgeSession } from "./bridge-session.js";

/** The variable that names the socket for the program. */
export const API_SOCKET_ENV = "MESH_API_SOCKET";

async function main(argv: readonly string[]): Promise<number> {
  const [program, ...args] = argv;
  if (program === undefined) {
    process.stderr.write("usage: bridge.mjs <program> [args…]\n");
    return 2;
  }
  const here = dirname(fileURLToPath(import.meta.url));
  const bundle = dirname(here);
  // mesh_sdk ships beside the bridge; a module's vendored packages are in its vendor/.
  const pythonPath = [join(here, "python"), join(bundle, "vendor"), process.env.PYTHONPATH]
    .filter((p) => p !== undefined && p !== "")
    .join(delimiter);
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONPATH: pythonPath };
  const credential = process.env[Env.brokerFile];
  if (credential === undefined || credential === "") return runProgram(program, args, env);

  const bus = await MeshBus.connectWithFile(credential, { waitForBus: true, name: "bridge" });
  const mesh = processMeshOver(bus);
  const folder = await mkdtemp(join(tmpdir(), "mesh-api-"));
  const socket = join(folder, "api.sock");
  const sessions = new Set<BridgeSession>();
  const server = createServer((connection: Socket) => {
    const session = new BridgeSession({ bus, mesh, connection, log });
    sessions.add(session);
    const lines = createInterface({ input: connection, crlfDelay: Infinity });
    lines.on("line", (line) => session.take(line));
    connection.on("close", () => {
      sessions.delete(session);
      void session.close();
    });
    connection.on("error", () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socket, () => resolve());
  });
  await chmod(socket, 0o600);
  try {
    return await runProgram(program, args, { ...env, [API_SOCKET_ENV]: socket });
  } finally {
    server.close();
    for (const session of sessions) await session.close();
    await mesh.close().catch(() => undefined);
    await rm(folder, { recursive: true, force: true });
  }
}

function log(line: string): void {
  process.stderr.write(`mesh bridge: ${line}\n`);
}

/** Runs the program with this process's output, hands it SIGTERM/SIGINT, returns its exit code. */
function runProgram(program: string, args: readonly string[], env: NodeJS.ProcessEnv) {
  return new Promise<number>((resolve) => {
    const child = spawn(program, [...args], { stdio: "inherit", env });
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    const term = forward("SIGTERM");
    const int = forward("SIGINT");
    process.on("SIGTERM", term);
    process.on("SIGINT", int);
    child.once("error", (error) => {
      log(`${program} could not be started: ${error.message}`);
      resolve(127);
    });
    child.once("exit", (code, signal) => {
      process.off("SIGTERM", term);
      process.off("SIGINT", int);
      resolve(code ?? 128 + (signal === "SIGKILL" ? 9 : signal === "SIGINT" ? 2 : 15));
    });
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
