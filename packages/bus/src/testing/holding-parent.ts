/**
 * A parent process for the tests of what a killed test leaves behind: it runs `lines` (module
 * code, written to `<dir>/parent.mjs`) and then holds until it is killed, its output collected.
 * The test reads what it started from that output, kills it with SIGKILL (no hook of its runs)
 * and looks at what is left.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface HoldingParent {
  readonly parent: ChildProcess;
  /** What it wrote so far: its stdout, and its stderr when that is collected too. */
  readonly output: () => string;
}

export async function startHoldingParent(
  dir: string,
  lines: readonly string[],
  options: { readonly stderr: "inherit" | "collect" },
): Promise<HoldingParent> {
  const script = join(dir, "parent.mjs");
  await writeFile(script, [...lines, `setInterval(() => undefined, 1 << 30);`].join("\n"));
  const parent = spawn(process.execPath, [script], {
    stdio: ["ignore", "pipe", options.stderr === "collect" ? "pipe" : "inherit"],
  });
  let out = "";
  parent.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  parent.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return { parent, output: () => out };
}
