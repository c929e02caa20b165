/**
 * The Go SDK's and Python mesh_sdk's own unit tests (`go test`, `python3 -m unittest`), run by the
 * project's test command so CI runs them. They need no network: Go builds in GOPATH mode against
 * Debian's nats.go, as the go build module does, and shares its build cache.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const SDK = dirname(dirname(fileURLToPath(import.meta.url)));
const run = promisify(execFile);

/** Runs a command; its output, whatever its exit, and whether it exited 0. */
async function outcome(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await run(command, args, { ...options, timeout: 15 * 60_000 });
    return { ok: true, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${failed.stdout ?? ""}${failed.stderr ?? failed.message}` };
  }
}

test("the Go SDK's go test passes", async () => {
  const { ok, output } = await outcome("go", ["test", "-trimpath", "-count=1", "-v", "."], {
    cwd: join(SDK, "go"),
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? tmpdir(),
      GOPATH: process.env.MESH_GOPATH ?? "/usr/share/gocode",
      GO111MODULE: "off",
      CGO_ENABLED: "0",
      GOFLAGS: "",
      GOPROXY: "off",
      GOCACHE: join(tmpdir(), "mesh-build-go-cache"),
    },
  });
  assert.ok(ok, output);
  // Tests that ran, not a package with none: a count that drops means tests were lost.
  const passed = output.split("\n").filter((l) => l.startsWith("--- PASS")).length;
  assert.ok(passed >= 9, `${passed} Go tests passed, 9 expected:\n${output}`);
});

test("mesh_sdk's python3 -m unittest passes", async () => {
  const { ok, output } = await outcome(
    "python3",
    ["-m", "unittest", "discover", "-s", join(SDK, "test-python"), "-v"],
    { cwd: SDK, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } },
  );
  assert.ok(ok, output);
  const ran = Number(/^Ran (\d+) tests?/m.exec(output)?.[1] ?? 0);
  assert.ok(ran >= 14, `${ran} Python tests ran, 14 expected:\n${output}`);
});
