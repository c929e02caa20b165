/**
 * The launcher as a process (decision 0200): `mesh host`, `mesh join` and the host `mesh up`
 * starts run it through the kit's process shell, so its first stop signal is passed to the host
 * build once, and its exit code is the host's.
 */
import { runProcess } from "@mesh/kit";
import { Launcher, type LauncherOptions } from "./launcher.js";

/** A host build stops its processes within their grace (10 s each) and drains its runtime: 2 min. */
const LAUNCHER_GRACE_MS = 120_000;

export function runLauncher(options: Omit<LauncherOptions, "log">): Promise<number> {
  return runProcess({ name: "mesh-host-launcher", graceMs: LAUNCHER_GRACE_MS }, ({ signal, log }) =>
    new Launcher({ ...options, log }).run({ signal }),
  );
}
