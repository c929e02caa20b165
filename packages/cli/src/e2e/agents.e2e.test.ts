/**
 * The mesh for agents and the stock NATS tooling, on one real mesh (`mesh up`, hello assigned,
 * counter registered): `mesh mcp` over stdio and over Streamable HTTP driven by the official MCP
 * SDK's client (tools listed with schemas, hello's greet called, a coded error for bad input,
 * `notifications/tools/list_changed` when counter is assigned and unassigned), the official
 * conformance suite's server scenarios for what the server implements (its report saved), and
 * the `nats` CLI's calls made with the context `mesh context` writes.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { MeshBus, request } from "@mesh/bus";
import { deadline, freePort, readStockContext, stockSession } from "@mesh/bus/testing";
import { mcpPrincipal } from "@mesh/core";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { runMesh, MESH_MAIN } from "../testing/run-mesh.js";
import { connectMcpStdio, type McpStdio } from "../testing/mcp-stdio.js";
import { startMeshUp, type MeshUp } from "../testing/mesh-up.js";
import { statusOf, until as waitUntil } from "../testing/until.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/modules", import.meta.url));
const NODE = "e2e-agents";
const LONG = 150_000;

let mesh: MeshUp;
let scratch: string;

async function mesh0(args: readonly string[]): Promise<Record<string, unknown>> {
  const run = await runMesh([...args, "--root", mesh.root, "--json"]);
  assert.equal(run.code, 0, `mesh ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** Polls `probe` until it gives something; a timeout carries `mesh status`. */
const until = <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> =>
  waitUntil(probe, ms, what, { explain: () => statusOf(mesh.root) });

/** hello's greet of `name`, called as an agent calls it. */
const greet = async (client: Client, name: string): Promise<CallToolResult> =>
  (await client.callTool({ name: "hello__greet", arguments: { name } })) as CallToolResult;

const textOf = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === "text" ? c.text : "")).join("");

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mesh-agents-"));
  mesh = await startMeshUp({ root: join(scratch, "root"), node: NODE });
  for (const example of ["hello", "counter"]) {
    await mesh0(["module", "add", join(EXAMPLES, example)]);
  }
  await mesh0(["assign", "hello", "--all"]);
  await until(
    async () => {
      const run = await runMesh(["call", "hello/greet", '{"name":"Ada"}', "--root", mesh.root]);
      return run.code === 0 ? true : undefined;
    },
    LONG,
    "hello to answer",
  );
});

after(async () => {
  await mesh?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe("mesh mcp over stdio, driven by the official SDK client", () => {
  let mcp: McpStdio | undefined;
  let client: Client;
  const changes: number[] = [];

  before(async () => {
    mcp = await connectMcpStdio(["--root", mesh.root], {
      name: "mesh-test",
      prepare: (c) =>
        c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          changes.push(Date.now());
        }),
    });
    client = mcp.client;
  });

  after(() => mcp?.close());

  test("tools/list names every tool <module>__<tool> with its description and schemas", async () => {
    const { tools } = await client.listTools();
    const greet = tools.find((t) => t.name === "hello__greet");
    assert.ok(greet, `hello__greet among ${tools.map((t) => t.name).join(", ")}`);
    assert.match(greet.description ?? "", /greet/i);
    assert.equal(greet.inputSchema.type, "object");
    assert.ok(greet.inputSchema.properties?.["name"], "the input schema names `name`");
    assert.equal(greet.outputSchema?.type, "object");
    assert.match(String(greet._meta?.["mesh/version"]), /^0\.0\.0\+\d+-[0-9a-f]+$/);
    assert.equal(
      tools.some((t) => t.name.startsWith("counter__")),
      false,
      "counter is not assigned",
    );
  });

  test("tools/call calls hello's greet through the bus", async () => {
    const result = await greet(client, "Ada");
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.structuredContent, { text: "Hello, Ada!" });
    assert.match(textOf(result), /Hello, Ada!/);
  });

  test("bad input is a tool error that carries the mesh's code and what to do", async () => {
    const result = await greet(client, "");
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^INVALID_INPUT: /);
    assert.equal(result._meta?.["mesh/code"], "INVALID_INPUT");
  });

  test("resources: each module's manifest and a page of its tools; an unknown one is -32002", async () => {
    const { resources } = await client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri).filter((u) => u.includes("/hello/")),
      ["mesh://modules/hello/manifest", "mesh://modules/hello/tools"],
    );
    const manifest = await client.readResource({ uri: "mesh://modules/hello/manifest" });
    const stored = JSON.parse(String((manifest.contents[0] as { text: string }).text)) as {
      module: string;
      bundles: { digest?: string }[];
    };
    assert.equal(stored.module, "hello");
    assert.match(String(stored.bundles[0]?.digest), /^[0-9a-f]{64}$/, "the built manifest");
    const page = await client.readResource({ uri: "mesh://modules/hello/tools" });
    assert.match(String((page.contents[0] as { text: string }).text), /## hello__greet/);
    await assert.rejects(
      client.readResource({ uri: "mesh://modules/nothing/manifest" }),
      /-32002.*NOT_FOUND/s,
    );
  });

  test("an unknown tool is refused with the JSON-RPC invalid-params error", async () => {
    await assert.rejects(client.callTool({ name: "nothing__here", arguments: {} }), /-32602/);
  });

  test("list_changed when counter is assigned, and again when it is unassigned", async (t) => {
    const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
    const seen = changes.length;
    await mesh0(["assign", "counter", "--all"]);
    await until(
      async () =>
        changes.length > seen && (await names()).some((n) => n.startsWith("counter__"))
          ? true
          : undefined,
      LONG,
      "list_changed and counter's tools listed",
    );
    t.diagnostic(`assigned: ${changes.length - seen} list_changed notification(s)`);
    const served = changes.length;
    await mesh0(["unassign", "counter", "--all"]);
    await until(
      async () =>
        changes.length > served && !(await names()).some((n) => n.startsWith("counter__"))
          ? true
          : undefined,
      LONG,
      "list_changed and counter's tools gone",
    );
  });

  test("mesh mcp refuses the operator's credential", async () => {
    const run = await runMesh([
      "mcp",
      "--credential",
      join(mesh.root, "credentials", "operator.json"),
    ]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /REFUSED/);
  });
});

describe("mesh mcp --allow, held by the bus", () => {
  test("the narrowed credential calls hello; a direct request to counter's tool is a permission violation", async () => {
    {
      await using mcp = await connectMcpStdio(["--allow", "hello", "--root", mesh.root], {
        name: "mesh-test-allow",
      });
      const { tools } = await mcp.client.listTools();
      assert.deepEqual([...new Set(tools.map((t) => t.name.split("__")[0]))], ["hello"]);
    }
    const file = join(mesh.root, "credentials", `${mcpPrincipal(["hello"])}.json`);
    await using bus = await MeshBus.connectWithFile(file);
    assert.equal(bus.credential.module, mcpPrincipal(["hello"]));
    const answer = await request(bus, `mesh.tools.${NODE}.hello.greet`, { name: "Eve" });
    assert.deepEqual(answer, { text: "Hello, Eve!" });
    await assert.rejects(
      request(bus, `mesh.tools.${NODE}.counter.increment`, {}, { timeoutMs: 20_000 }),
      (error: unknown) => isMeshError(error, ErrorCode.PERMISSION_DENIED),
    );
  });

  test("a module in --allow that is not registered is refused, naming it and the known ones", async () => {
    const run = await runMesh(["mcp", "--allow", "hello,helo-world", "--root", mesh.root]);
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /REFUSED/);
    assert.match(run.stderr, /"helo-world"/);
    assert.match(run.stderr, /registered: counter, hello/);
    assert.match(run.stderr, /mesh module add/);
  });
});

describe("mesh mcp over Streamable HTTP", () => {
  let server: ChildProcess;
  let url: string;

  before(async () => {
    server = spawn(process.execPath, [MESH_MAIN, "mcp", "--http", "0", "--root", mesh.root], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    url = await deadline(
      new Promise<string>((resolve, reject) => {
        server.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const found = /serving MCP at (\S+)/.exec(out);
          if (found?.[1] !== undefined) resolve(found[1]);
        });
        server.once("exit", (code) => reject(new Error(`mesh mcp exited ${String(code)}`)));
      }),
      60_000,
      "mesh mcp --http to listen",
    );
  });

  after(() => {
    if (server?.pid !== undefined && server.exitCode === null) server.kill("SIGKILL");
  });

  test("a client lists and calls over HTTP", async () => {
    const client = new Client({ name: "mesh-test-http", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === "hello__greet"));
      const result = await greet(client, "Bo");
      assert.deepEqual(result.structuredContent, { text: "Hello, Bo!" });
    } finally {
      await client.close();
    }
  });

  test("the official conformance suite passes for what the server implements", async (t) => {
    const report = await runConformance(url, join(scratch, "conformance"));
    const failed = report.filter((c) => c.status === "FAILURE");
    t.diagnostic(`${report.length} checks, ${failed.length} failed; report in ${REPORT_FILE}`);
    assert.ok(report.length > 0, "the suite ran checks");
    assert.deepEqual(failed, []);
  });

  test("listening beyond loopback without a token is refused", async () => {
    const port = await freePort();
    const run = await runMesh([
      "mcp",
      "--http",
      String(port),
      "--listen",
      "0.0.0.0",
      "--root",
      mesh.root,
    ]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /token/);
  });
});

describe("the nats CLI's calls with the context mesh context writes", () => {
  test("kv ls, kv get, stream ls, micro ls and req work for the operator", async () => {
    const dir = join(scratch, "nats-context");
    const written = await mesh0(["context", "--dir", dir]);
    assert.equal(written["name"], `mesh-${NODE}`);
    await using nats = await stockSession(await readStockContext(String(written["path"])));
    assert.equal(nats.inbox, "_INBOX", "the default inbox");
    const buckets = await nats.kvLs();
    for (const bucket of ["mesh-modules", "mesh-wants", "mesh-have"]) {
      assert.ok(buckets.includes(bucket), `${bucket} in ${buckets.join(", ")}`);
    }
    const hello = JSON.parse((await nats.kvGet("mesh-modules", "hello")) ?? "{}") as object;
    assert.ok("source" in hello, "hello's registration");
    await assert.rejects(nats.kvGet("mesh-secrets", "hello.token"), /Permissions Violation/);
    assert.ok((await nats.streamLs()).includes("KV_mesh-modules"));
    const services = await nats.microLs();
    const served = services.find((s) => s.name === "hello");
    assert.ok(served, `hello among ${services.map((s) => s.name).join(", ")}`);
    assert.match(served.version, /^0\.0\.0\+\d+-[0-9a-f]+$/, "the module's build");
    const reply = await nats.req(`mesh.tools.${NODE}.hello.greet`, '{"name":"Cy"}');
    assert.deepEqual(JSON.parse(reply), { text: "Hello, Cy!" });
  });

  test("the operator's default inbox does not hear another credential's replies", async () => {
    const dir = join(scratch, "nats-context");
    const operator = await mesh0(["context", "--dir", dir]);
    const mcp = await mesh0(["context", "--dir", dir, "--principal", "mcp"]);
    await using asOperator = await stockSession(await readStockContext(String(operator["path"])));
    await using asMcp = await stockSession(await readStockContext(String(mcp["path"])));
    assert.equal(asMcp.inbox, `_INBOX.${NODE}.mcp`);
    let reply = "";
    const heard = await asOperator.sub("_INBOX.>", async () => {
      reply = await asMcp.req(`mesh.tools.${NODE}.hello.greet`, '{"name":"Di"}');
    });
    assert.deepEqual(JSON.parse(reply), { text: "Hello, Di!" });
    assert.deepEqual(
      heard.filter((s) => s.startsWith(`_INBOX.${NODE}.`)),
      [],
    );
  });
});

describe("shell completion", () => {
  test("bash completes verbs, and module and node names from the mesh", async () => {
    const bin = join(scratch, "bin");
    await mkdir(bin, { recursive: true });
    await writeFile(
      join(bin, "mesh"),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(MESH_MAIN)} "$@"\n`,
      { mode: 0o755 },
    );
    const complete = (words: readonly string[]) =>
      runShell(
        `eval "$(mesh completion bash)"; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(" ")}); ` +
          `COMP_CWORD=${words.length - 1}; _mesh; printf '%s\\n' "\${COMPREPLY[@]}"`,
        { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}`, MESH_CREDENTIAL: "" },
      );
    assert.deepEqual(await complete(["mesh", "mc"]), ["mcp"]);
    assert.ok((await complete(["mesh", "mcp", "--al"])).includes("--allow"));
    // Every registered module: the mesh's own parts and its host build too (decisions 0190, 0201).
    assert.deepEqual(await complete(["mesh", "assign", "--root", mesh.root, ""]), [
      "counter",
      "hello",
      "mesh-assigner",
      "mesh-builder",
      "mesh-host",
      "mesh-indexer",
      "node-tools",
    ]);
    assert.deepEqual(await complete(["mesh", "tools", "--root", mesh.root, "--node", "e2e"]), [
      NODE,
    ]);
  });
});

/** Runs a bash script and returns its output's lines. */
async function runShell(script: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  return deadline(
    new Promise<string[]>((resolve, reject) => {
      const child = spawn("bash", ["-c", script], { env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
      child.once("error", reject);
      child.once("exit", (code) =>
        code === 0
          ? resolve(out.split("\n").filter((l) => l !== ""))
          : reject(new Error(`bash exited ${String(code)}: ${err}`)),
      );
    }),
    60_000,
    "a completion",
  );
}

// ---------------------------------------------------------------------------------------------
// The conformance suite: @modelcontextprotocol/conformance 0.1.13, the newest that runs on Node 20
// (0.1.14 and later import fs.globSync, which Node 22 added).

/** The server scenarios that test what `mesh mcp` implements: lifecycle, ping, tools, resources, HTTP. */
const SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "resources-list",
  "dns-rebinding-protection",
  "server-sse-multiple-streams",
];
/** The suite's command, from the nearest node_modules that has it (npm may not hoist it). */
const CONFORMANCE_BIN = ((): string => {
  const tail = join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
  for (let dir = fileURLToPath(new URL(".", import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, tail))) return join(dir, tail);
    if (dirname(dir) === dir) throw new Error("@modelcontextprotocol/conformance is not installed");
  }
})();
/** Where the report is kept (beside the build, never in the source tree). */
export const REPORT_FILE = fileURLToPath(new URL("../mcp-conformance.json", import.meta.url));

interface Check {
  readonly scenario: string;
  readonly id: string;
  readonly status: string;
  readonly description: string;
}

/** Runs each scenario and reads its checks off what it prints (0.1.13 writes no results folder). */
async function runConformance(url: string, cwd: string): Promise<Check[]> {
  await mkdir(cwd, { recursive: true });
  const checks: Check[] = [];
  for (const scenario of SCENARIOS) {
    const printed = await deadline(
      new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [CONFORMANCE_BIN, "server", "--url", url, "--scenario", scenario],
          { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } },
        );
        let out = "";
        child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.once("error", reject);
        child.once("exit", () => resolve(out));
      }),
      120_000,
      `conformance ${scenario}`,
    );
    // eslint-disable-next-line no-control-regex -- the suite colours its output
    const plain = printed.replace(/\u001b\[[0-9;]*m/g, "");
    const found = [...plain.matchAll(/\[([\w-]+)\s*\] (SUCCESS|FAILURE|WARNING)\s+(.*)/g)];
    assert.ok(found.length > 0, `the ${scenario} scenario printed checks:\n${plain}`);
    for (const [, id, status, description] of found) {
      checks.push({ scenario, id: id ?? "", status: status ?? "", description: description ?? "" });
    }
  }
  await writeFile(
    REPORT_FILE,
    `${JSON.stringify({ suite: "@modelcontextprotocol/conformance@0.1.13", url, at: new Date().toISOString(), checks }, null, 2)}\n`,
  );
  return checks;
}
