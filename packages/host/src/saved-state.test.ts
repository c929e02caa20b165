/**
 * Issue 27: the host read its saved state with a bare cast, so a file of the wrong shape (a pid
 * that is not a number) was half trusted, and its pids adopted and signalled. A state that does
 * not parse is refused with a line that says so, kept aside, and the host starts clean.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { reapWithMe } from "@mesh/bus/testing";
import { AppliedState } from "@mesh/protocol";
import { statePath } from "./applied-state.js";
import { isAlive, startTimeOf } from "./proc.js";
import {
  LONG_RUNNING,
  bundleOf,
  busAndRoot,
  composedOf,
  processResource,
  tempRoot,
  waitFor,
  withHost,
} from "./test-support.js";

const NODE = "s1";
const fx = busAndRoot([NODE]);

/** The refused copy beside the state file, and its text. */
async function keptAside(root: string): Promise<string[]> {
  const folder = join(root, "state");
  const names = (await readdir(folder)).filter((n) => n.startsWith("applied.json.refused-"));
  return Promise.all(names.map((n) => readFile(join(folder, n), "utf8")));
}

test("a saved state that does not parse is refused and kept aside; the host starts clean and adopts nothing", async () => {
  const { bus } = fx;
  const root = await tempRoot();
  // A process that is not the host's, which the broken file names as its own.
  const stranger = spawn(process.execPath, ["-e", LONG_RUNNING], { stdio: "ignore" });
  reapWithMe(stranger.pid);
  try {
    const pid = stranger.pid as number;
    const startTime = await waitFor("the stranger's start time", () => startTimeOf(pid));
    const digest = (await bus.artifacts.put(await bundleOf({ "main.js": LONG_RUNNING }))).digest;
    const app = processResource({ root, module: "app", name: "p", digest });
    const broken = {
      version: 1,
      composed: composedOf(NODE, [app]),
      config: {},
      deliveries: {},
      needs: {},
      // The pid as a string: a cast took it, and /proc/<pid> read it as the number.
      processes: {
        [app.id]: { module: "app", name: "p", effective: "e", pid: `${pid}`, startTime },
      },
    };
    const text = `${JSON.stringify(broken)}\n`;
    await mkdir(join(root, "state"), { recursive: true });
    await writeFile(statePath(root), text);
    const logged: string[] = [];
    await withHost(bus, { node: NODE, root, log: (l) => logged.push(l) }, async (host) => {
      const refusal = await waitFor("the refusal in the log", () =>
        logged.find((l) => /applied state .* is refused/.test(l)),
      );
      assert.match(refusal, new RegExp(`processes\\.${app.id.replace(".", "\\.")}\\.pid`));
      assert.match(refusal, /kept at .*applied\.json\.refused-/);
      assert.deepEqual(await keptAside(root), [text], "the refused file is kept as it was");
      assert.deepEqual(
        logged.filter((l) => /adopted/.test(l)),
        [],
        "nothing the refused file names is adopted",
      );
      // Started clean: it applies what the bus says, with a process of its own.
      await bus.compose(NODE, [app]);
      const started = await waitFor("app started anew", () => host.processes().get(app.id));
      assert.notEqual(started.pid, pid);
      assert.ok(await isAlive({ pid, startTime }), "the stranger was never signalled");
      await waitFor("a state that parses written", async () =>
        AppliedState.safeParse(JSON.parse(await readFile(statePath(root), "utf8"))).success
          ? true
          : undefined,
      );
    });
    assert.ok(await isAlive({ pid, startTime }), "the host's stop did not end the stranger");
  } finally {
    stranger.kill("SIGKILL");
  }
});

test("a saved state cut short (not JSON) is refused the same way; the host runs", async () => {
  const { bus } = fx;
  const root = await tempRoot();
  await mkdir(join(root, "state"), { recursive: true });
  await writeFile(statePath(root), '{"version":1,"processes":{"a.process-p":{"pid":');
  const logged: string[] = [];
  await withHost(bus, { node: NODE, root, log: (l) => logged.push(l) }, async () => {
    await waitFor("the refusal in the log", () =>
      logged.find((l) => /applied state .* is refused \(not JSON/.test(l)),
    );
    assert.deepEqual(await keptAside(root), ['{"version":1,"processes":{"a.process-p":{"pid":']);
  });
});
