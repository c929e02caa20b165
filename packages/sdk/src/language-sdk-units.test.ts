/**
 * The Go SDK's and Python mesh_sdk's own tests (`go test`, `python3 -m unittest`), run by the
 * project's test command so CI runs them. They need no network: Go builds in GOPATH mode against
 * Debian's nats.go, as the go build module does, and shares its build cache (no second compile of
 * the standard library). The Go SDK's bus tests (`-tags meshbus`, bus_test.go) run against a real
 * nats-server started here, with greeter's credential on the grant its manifest gives and the
 * admin's for the peer that plays the rest of the mesh.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeCredential } from "@mesh/bus";
import { credentialFor, reapWithMe } from "@mesh/bus/testing";
import { counter, greeter, moduleSuite } from "./test-support.js";

const SDK = dirname(dirname(fileURLToPath(import.meta.url)));

/** Runs a command in a process group the reaper ends with this one; its output and exit code. */
function outcome(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; root: string },
): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // The test binary go test builds and runs names the root in its environment: it goes too.
    reapWithMe(child.pid, { root: options.root });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.once("error", reject);
    child.once("close", (code) => resolve({ ok: code === 0, output }));
  });
}

/** The names of the tests a folder's files declare, by a pattern whose first group is one. */
async function declared(folder: string, file: RegExp, name: RegExp): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await readdir(folder)) {
    if (!file.test(entry)) continue;
    const text = await readFile(join(folder, entry), "utf8");
    for (const found of text.matchAll(name)) names.push(found[1] ?? "");
  }
  assert.ok(names.length > 0, `no tests declared in ${folder}`);
  return names.sort();
}

// The Go SDK's bus tests' peer (MESH_TEST_PEER_FILE) plays the rest of the mesh as the admin.
const fx = moduleSuite(
  {
    manifest: greeter,
    owners: { greeter, counter },
    otherStates: [
      ["counter", "counts"],
      ["other", "secrets"],
    ],
    setUp: () =>
      writeCredential(
        join(fx.dir, "peer.json"),
        credentialFor(fx.server, fx.server.admin, { node: "n1", module: "peer" }),
      ),
  },
  { before, after },
);

test("the Go SDK's go test passes, its bus tests on a real nats-server", async () => {
  const { ok, output } = await outcome(
    "go",
    ["test", "-trimpath", "-tags", "meshbus", "-count=1", "-v", "."],
    {
      cwd: join(SDK, "go"),
      root: fx.dir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? tmpdir(),
        GOPATH: process.env.MESH_GOPATH ?? "/usr/share/gocode",
        GO111MODULE: "off",
        CGO_ENABLED: "0",
        GOFLAGS: "",
        GOPROXY: "off",
        // The go build module's cache: the standard library compiled for -trimpath once.
        GOCACHE: join(tmpdir(), "mesh-build-go-cache"),
        MESH_BROKER_FILE: fx.credentialFile,
        MESH_TEST_PEER_FILE: join(fx.dir, "peer.json"),
        ...(process.env.MESH_TEST_TIME_FACTOR === undefined
          ? {}
          : { MESH_TEST_TIME_FACTOR: process.env.MESH_TEST_TIME_FACTOR }),
      },
    },
  );
  assert.ok(ok, output);
  // Every test the files declare passed: none lost to a build tag or a rename.
  const passed = [...output.matchAll(/^--- PASS: (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(
    passed,
    await declared(join(SDK, "go"), /_test\.go$/, /^func (Test\w+)\(t \*testing\.T\)/gm),
    output,
  );
});

test("mesh_sdk's python3 -m unittest passes", async () => {
  const folder = join(SDK, "test-python");
  const { ok, output } = await outcome(
    "python3",
    ["-m", "unittest", "discover", "-s", folder, "-v"],
    { cwd: SDK, root: folder, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } },
  );
  assert.ok(ok, output);
  const ran = Number(/^Ran (\d+) tests?/m.exec(output)?.[1] ?? 0);
  const tests = await declared(folder, /^test_.*\.py$/, /^ {4}def (test_\w+)\(self/gm);
  assert.equal(ran, tests.length, output);
});
