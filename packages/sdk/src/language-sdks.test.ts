/**
 * The Go SDK and Python's mesh_sdk against a real bus, on a module's own grant, each doing what
 * `@mesh/sdk/process` does: a state's values (one put, one deleted) and keys (all, by pattern,
 * none), a call to a tool the module declares (on its node, on another, one nothing serves, one
 * that refuses with a code), a condition, and the states it says it keeps. One program per
 * language does the same steps as the TypeScript SDK; its results must be the TypeScript SDK's,
 * and those are checked against what was put; what it said is read back with the protocol's
 * schemas, as the mesh's readers read it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cp, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { z } from "zod";
import {
  Condition,
  Keeps,
  MeshError,
  ReplyCode,
  Stream,
  conditionSubject,
  keepsSubject,
  toolSubject,
} from "@mesh/protocol";
import { readStream, serve, type Served } from "@mesh/bus";
import { reapWithMe, waitFor } from "@mesh/bus/testing";
import { connectProcess } from "./process.js";
import { counter, greeter, moduleSuite } from "./test-support.js";

const SDK = dirname(dirname(fileURLToPath(import.meta.url)));
const run = promisify(execFile);

/** What every language's program prints: the same steps, the same names. */
interface Steps {
  readonly got: unknown;
  readonly gotDeleted: unknown;
  readonly keys: string[];
  readonly keysA: string[];
  readonly keysNone: string[];
  readonly call: unknown;
  readonly callN2: unknown;
  readonly missing: string | null;
  readonly refused: string | null;
}

const KEPT = [
  { name: "notes", readable: true },
  { name: "drafts", readable: false },
];

const served: Served[] = [];

/** hello's tools on `node`: greet answers with where it ran; refuses always refuses. */
const serveHello = (node: string): Promise<Served> =>
  serve(fx.admin, {
    name: `hello-${node}`,
    version: "0.0.1",
    description: `hello on ${node}`,
    endpoints: [
      {
        name: "greet",
        subject: toolSubject(node, "hello", "greet"),
        handler: (req) =>
          Promise.resolve({ text: `hello, ${(req.json() as { name: string }).name}`, node }),
      },
      {
        name: "refuses",
        subject: toolSubject(node, "hello", "refuses"),
        handler: () => Promise.reject(new MeshError(ReplyCode.INVALID_INPUT, "refuses everything")),
      },
    ],
  });

const fx = moduleSuite(
  {
    manifest: greeter,
    owners: { greeter, counter },
    setUp: async () => {
      for (const node of ["n1", "n2"]) served.push(await serveHello(node));
    },
    tearDown: async () => {
      for (const s of served) await s.stop().catch(() => undefined);
    },
  },
  { before, after },
);

/** The last message standing on `stream` under `filter`, read as the mesh's readers read it. */
async function lastSaid<T>(stream: string, filter: string, schema: z.ZodType<T>) {
  let last: T | undefined;
  for await (const event of readStream(fx.admin, stream, { filter, schema })) {
    if (event.type === "current") break;
    if (event.type === "message") last = event.value;
  }
  return last;
}

/** The keeps greeter said last. */
async function keepsSaid(): Promise<Keeps> {
  const last = await lastSaid(Stream.keeps, keepsSubject("n1", "greeter"), Keeps);
  assert.ok(last, "greeter said what it keeps");
  return last;
}

/** The condition greeter said last under `ready`. */
const readySaid = (): Promise<Condition | undefined> =>
  lastSaid(Stream.conditions, conditionSubject("greeter", "ready"), Condition);

/** The ready condition each language's program says, but for its time. */
const READY = {
  module: "greeter",
  name: "ready",
  level: "info",
  message: "steps done",
  node: "n1",
};

/** Waits for greeter to say what it keeps after the saying `before` (its time), and returns it. */
async function keepsSaidAfter(before: string | undefined, what: string): Promise<Keeps> {
  return waitFor(
    async () => {
      const said = await keepsSaid().catch(() => undefined);
      return said !== undefined && said.at !== before ? said : undefined;
    },
    { what },
  );
}

async function typescriptSteps(): Promise<Steps> {
  await using mesh = await connectProcess({ credentialFile: fx.credentialFile });
  const notes = mesh.state("notes");
  for (const key of ["b.1", "a.2", "a.1", "c"]) await notes.put(key, key);
  await notes.put("a.1", { n: 1, list: ["x", null], ok: true });
  await notes.delete("c");
  const code = (done: Promise<unknown>) =>
    done.then(
      () => null,
      (e: unknown) => (e instanceof MeshError ? e.code : String(e)),
    );
  const steps: Steps = {
    got: await notes.get("a.1"),
    gotDeleted: (await notes.get("c")) ?? null,
    keys: await notes.keys(),
    keysA: await notes.keys("a.*"),
    keysNone: await mesh.state("drafts").keys(),
    call: await mesh.call("hello/greet", { name: "sdk" }),
    callN2: await mesh.call("hello/greet", { name: "sdk" }, { node: "n2" }),
    missing: await code(mesh.call("hello/missing", {}, { timeoutMs: 2_000 })),
    refused: await code(mesh.call("hello/refuses", {})),
  };
  await mesh.condition("ready", "info", "steps done");
  mesh.keeps(KEPT);
  await keepsSaidAfter(undefined, "TypeScript's keeps said");
  return steps;
}

/**
 * Runs a program with greeter's credential; it prints its steps as one JSON line and then waits
 * for its stdin to close, so what it said (keeps) is read before it goes.
 */
async function runProgram(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const before = (await keepsSaid().catch(() => undefined))?.at;
  const readyBefore = (await readySaid())?.at;
  const child = spawn(command, args, {
    env: { ...process.env, ...env, MESH_BROKER_FILE: fx.credentialFile },
    stdio: ["pipe", "pipe", "inherit"],
  });
  reapWithMe(child.pid);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    const line = await waitFor(() => out.split("\n").find((l) => l.startsWith("{")), {
      what: `${command}'s steps`,
      timeout: 60_000,
    });
    const steps = JSON.parse(line) as Steps;
    const said = await keepsSaidAfter(before, `${command}'s keeps said`);
    const ready = await readySaid();
    assert.notEqual(ready?.at, readyBefore, `${command} said its ready condition`);
    return { steps, said, ready };
  } finally {
    child.stdin.end();
    const code = await exited;
    assert.equal(code, 0, `${command} exited with ${code}: ${out}`);
  }
}

let expected: Steps;

test("the TypeScript SDK's steps, as put (what the other languages must give)", async () => {
  expected = await typescriptSteps();
  assert.deepEqual(expected, {
    got: { n: 1, list: ["x", null], ok: true },
    gotDeleted: null,
    keys: ["a.1", "a.2", "b.1"],
    keysA: ["a.1", "a.2"],
    keysNone: [],
    call: { text: "hello, sdk", node: "n1" },
    callN2: { text: "hello, sdk", node: "n2" },
    missing: "NOT_FOUND",
    refused: "INVALID_INPUT",
  });
  const said = await keepsSaid();
  assert.deepEqual(
    said.states,
    [...KEPT].sort((a, b) => a.name.localeCompare(b.name)),
  );
  assert.deepEqual({ ...(await readySaid()), at: undefined }, { ...READY, at: undefined });
});

const GO_PROGRAM = `package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	mesh "mesh.local/sdk"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func code(_ json.RawMessage, err error) any {
	var e *mesh.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return err.Error()
	}
	return nil
}

func main() {
	m, err := mesh.Connect()
	must(err)
	notes := m.State("notes")
	for _, key := range []string{"b.1", "a.2", "a.1", "c"} {
		must(notes.Put(key, key))
	}
	must(notes.Put("a.1", map[string]any{"n": 1, "list": []any{"x", nil}, "ok": true}))
	must(notes.Delete("c"))
	out := map[string]any{}
	out["got"], err = notes.Get("a.1")
	must(err)
	out["gotDeleted"], err = notes.Get("c")
	must(err)
	out["keys"], err = notes.Keys("")
	must(err)
	out["keysA"], err = notes.Keys("a.*")
	must(err)
	out["keysNone"], err = m.State("drafts").Keys("")
	must(err)
	out["call"], err = m.Call("hello/greet", map[string]any{"name": "sdk"})
	must(err)
	out["callN2"], err = m.Call("hello/greet", map[string]any{"name": "sdk"}, mesh.CallOptions{Node: "n2"})
	must(err)
	out["missing"] = code(m.Call("hello/missing", nil, mesh.CallOptions{Timeout: 2 * time.Second}))
	out["refused"] = code(m.Call("hello/refuses", nil))
	must(m.Condition("ready", "info", "steps done"))
	must(m.Keeps([]mesh.KeptState{{Name: "notes", Readable: true}, {Name: "drafts", Readable: false}}))
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	bufio.NewReader(os.Stdin).ReadString('\\n') //nolint:errcheck // until the test closes stdin
	m.Close()
}
`;

test("the Go SDK's State.Get, Put, Delete and Keys, Call, Condition and Keeps do what the TypeScript SDK does, on a real bus", async () => {
  assert.ok(expected, "the TypeScript steps ran first");
  const work = join(fx.dir, "gopath");
  const at = join(work, "src", "sdktest");
  await mkdir(at, { recursive: true });
  await cp(join(SDK, "go"), join(work, "src", "mesh.local", "sdk"), { recursive: true });
  await writeFile(join(at, "main.go"), GO_PROGRAM);
  const binary = join(fx.dir, "sdktest");
  // As the go build module builds (GOPATH mode, Debian's nats.go), sharing its build cache.
  await run("go", ["build", "-trimpath", "-o", binary, "."], {
    cwd: at,
    timeout: 15 * 60_000,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? tmpdir(),
      GOPATH: `${work}:${process.env.MESH_GOPATH ?? "/usr/share/gocode"}`,
      GO111MODULE: "off",
      CGO_ENABLED: "0",
      GOFLAGS: "",
      GOPROXY: "off",
      GOCACHE: join(tmpdir(), "mesh-build-go-cache"),
    },
  });
  const { steps, said, ready } = await runProgram(binary, [], {});
  assert.deepEqual(steps, expected);
  assert.deepEqual({ ...ready, at: undefined }, { ...READY, at: undefined });
  assert.deepEqual(
    said.states,
    [...KEPT].sort((a, b) => a.name.localeCompare(b.name)),
  );
});

const PYTHON_PROGRAM = `import json, sys
import mesh_sdk

def code(ask):
    try:
        ask()
        return None
    except mesh_sdk.MeshError as error:
        return error.code

mesh = mesh_sdk.connect()
notes = mesh.state("notes")
for key in ["b.1", "a.2", "a.1", "c"]:
    notes.put(key, key)
notes.put("a.1", {"n": 1, "list": ["x", None], "ok": True})
notes.delete("c")
out = {
    "got": notes.get("a.1"),
    "gotDeleted": notes.get("c"),
    "keys": notes.keys(),
    "keysA": notes.keys("a.*"),
    "keysNone": mesh.state("drafts").keys(),
    "call": mesh.call("hello/greet", {"name": "sdk"}),
    "callN2": mesh.call("hello/greet", {"name": "sdk"}, node="n2"),
    "missing": code(lambda: mesh.call("hello/missing", timeout_ms=2000)),
    "refused": code(lambda: mesh.call("hello/refuses")),
}
mesh.condition("ready", "info", "steps done")
mesh.keeps([{"name": "notes", "readable": True}, {"name": "drafts", "readable": False}])
print(json.dumps(out), flush=True)
sys.stdin.read()
mesh.close()
`;

test("mesh_sdk's state get, put, delete and keys, call, condition and keeps (through the bridge) do what the TypeScript SDK does, on a real bus", async () => {
  assert.ok(expected, "the TypeScript steps ran first");
  const program = join(fx.dir, "steps.py");
  await writeFile(program, PYTHON_PROGRAM);
  // The bridge as the python build module bundles it, with mesh_sdk from the package's folder.
  const { steps, said, ready } = await runProgram(
    process.execPath,
    [join(SDK, "dist", "bridge.js"), "python3", program],
    { PYTHONPATH: join(SDK, "python") },
  );
  assert.deepEqual(steps, expected);
  assert.deepEqual({ ...ready, at: undefined }, { ...READY, at: undefined });
  assert.deepEqual(
    said.states,
    [...KEPT].sort((a, b) => a.name.localeCompare(b.name)),
  );
});
