/**
 * A delivery part run as a module's process (decision 0190): the host starts its bundle with the
 * credential its manifest declares, named by MESH_BROKER_FILE, as it starts any module's daemon.
 * Each part's entry (`indexer.ts`, `builder.ts`, `assigner.ts`) imports its own daemon only, so
 * the bundle the part ships as holds that daemon's code and not the build modules' compilers.
 */
import { Env } from "@mesh/protocol";
import type { MeshBus } from "@mesh/bus";
import type { Daemon } from "@mesh/kit";
import { runDaemonProcess } from "../daemon.js";

/** Runs `make`'s daemon on the credential MESH_BROKER_FILE names; returns the exit code. */
export function runPartProcess(
  name: string,
  make: (bus: MeshBus, log: (line: string) => void) => Promise<Daemon>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const credential = env[Env.brokerFile]?.trim();
  if (credential === undefined || credential === "") {
    process.stderr.write(
      `mesh-${name}: ${Env.brokerFile} is not set, so there is no credential to reach the bus with; ` +
        `the host sets it from the manifest's own-secrets.broker (run it as a module), or run \`mesh ${name} --credential FILE\`\n`,
    );
    return Promise.resolve(2);
  }
  return runDaemonProcess(name, { credential }, make);
}
