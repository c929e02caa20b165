/**
 * A process's output through its pipe, with real processes: the limit holds by bytes written, a
 * host that stops reading takes nothing with it, and the next reader keeps what waited.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_TAIL_LIMITS } from "./log-lines.js";
import { LogPipe, openForProcess, pipeOf } from "./log-pipe.js";
import { tempRoot, waitFor } from "./test-support.js";

const roots: string[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

/** Starts `script` with its stdout the pipe of `file`, as the supervisor hands it. */
async function writer(file: string, script: string, cwd: string): Promise<ChildProcess> {
  const out = await openForProcess(pipeOf(file));
  try {
    const child = spawn(process.execPath, ["-e", script], {
      cwd,
      stdio: ["ignore", out.fd, "inherit"],
      detached: true,
    });
    children.push(child);
    return child;
  } finally {
    await out.close();
  }
}

async function setUp(): Promise<{ root: string; file: string }> {
  const root = await tempRoot();
  roots.push(root);
  return { root, file: join(root, "p.log") };
}

test("one write larger than the limit: neither the file nor .1 passes it, the newest bytes kept", async () => {
  const { root, file } = await setUp();
  const limits = { ...DEFAULT_TAIL_LIMITS, maxFileBytes: 1000 };
  const pipe = new LogPipe(file, limits, () => undefined);
  await pipe.watch();
  try {
    const child = await writer(
      file,
      `const b = Buffer.alloc(5000, 97); b.write("the end\\n", 4992); require("fs").writeSync(1, b);`,
      root,
    );
    await new Promise((r) => child.once("exit", r));
    await waitFor("the last bytes kept", async () =>
      (await readFile(file, "utf8")).endsWith("the end\n"),
    );
    assert.equal((await stat(file)).size, 1000);
    assert.equal((await stat(`${file}.1`)).size, 1000);
  } finally {
    await pipe.close();
  }
});

test("a host that stops reading takes nothing with it: the process runs on, and the next reader keeps what waited", async () => {
  const { root, file } = await setUp();
  const lines: string[] = [];
  const first = new LogPipe(file, DEFAULT_TAIL_LIMITS, (l) => lines.push(l));
  await first.watch();
  // Writes a line when told (a file appears), so each write is after the reader it is meant for.
  const script = [
    `const fs = require("node:fs");`,
    `let n = 0;`,
    `setInterval(() => {`,
    `  if (!fs.existsSync("go-" + n)) return;`,
    `  fs.writeSync(1, "line " + n + "\\n");`,
    `  fs.writeFileSync("wrote-" + n, "");`,
    `  n += 1;`,
    `}, 20);`,
  ].join("\n");
  const child = await writer(file, script, root);
  await writeFile(join(root, "go-0"), "");
  await waitFor("line 0 read", () => lines.includes("line 0"));
  await first.close(); // the host is gone
  await writeFile(join(root, "go-1"), "");
  await waitFor("line 1 written while no host reads", async () =>
    readFile(join(root, "wrote-1")).then(
      () => true,
      () => false,
    ),
  );
  const second = new LogPipe(file, DEFAULT_TAIL_LIMITS, (l) => lines.push(l));
  try {
    await second.watch();
    await writeFile(join(root, "go-2"), "");
    await waitFor("lines 1 and 2 kept by the next reader", async () =>
      (await readFile(file, "utf8")).endsWith("line 0\nline 1\nline 2\n"),
    );
    assert.equal(child.exitCode, null, "the process runs on");
    assert.deepEqual(lines, ["line 0", "line 1", "line 2"]);
  } finally {
    await second.close();
    child.kill("SIGKILL");
  }
});

test("a file left over the limit (by a host before pipes) is bounded when a reader takes it up", async () => {
  const { file } = await setUp();
  await writeFile(file, Buffer.alloc(5000, 98));
  const pipe = new LogPipe(file, { ...DEFAULT_TAIL_LIMITS, maxFileBytes: 1000 }, () => undefined);
  try {
    await pipe.watch();
    assert.equal((await stat(file)).size, 0);
    assert.equal((await stat(`${file}.1`)).size, 1000);
  } finally {
    await pipe.close();
  }
});
