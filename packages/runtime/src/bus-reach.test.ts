/**
 * The status file says whether the runtime reaches the bus (issue 15: a process that cannot reach
 * the bus is not healthy). On a real server: the runtime's user is taken away and the server
 * reloaded, which closes its connection and refuses its logins; the status says so, and the
 * host's rule over that file makes its modules failing once that lasts; the user given back, the
 * runtime logs in again by itself and the status says so.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DEFAULT_HEALTH_RULES, runtimeUnreachable } from "@mesh/host";
import { RuntimeStatusFile } from "@mesh/protocol";
import { startTestBus, type TestBus } from "./test-support/setup.js";
import { startTestRuntime, type TestRuntime } from "./test-support/test-runtime.js";

const WAIT = 60_000;

let bus: TestBus;
let rt: TestRuntime;

before(async () => {
  bus = await startTestBus({ modules: [] });
  rt = await startTestRuntime(bus, {
    name: "mesh-runtime-reach-",
    modules: {},
    statusFile: true,
    connect: { say: () => undefined },
  });
});

after(async () => {
  await rt?.stop();
  await bus?.stop();
});

/** The status file as the host reads it, once it matches (within WAIT). */
async function fileUntil(
  what: string,
  match: (s: RuntimeStatusFile) => boolean,
): Promise<RuntimeStatusFile> {
  const end = Date.now() + WAIT;
  while (Date.now() < end) {
    const text = await readFile(join(rt.dir, "status.json"), "utf8").catch(() => undefined);
    const parsed = text === undefined ? undefined : RuntimeStatusFile.safeParse(JSON.parse(text));
    if (parsed?.success === true && match(parsed.data)) return parsed.data;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${what} within ${WAIT} ms`);
}

test("the status file says when the runtime cannot reach the bus, and when it is back", async () => {
  const first = await fileUntil("a status with the bus", (s) => s.bus !== undefined);
  assert.equal(first.bus?.connected, true);

  const [runtimeUser, ...others] = bus.users;
  await bus.server.setUsers(others);
  const away = await fileUntil(
    "the status saying the bus is not reached",
    (s) => s.bus?.connected === false,
  );
  const since = away.bus?.since as string;
  // The host's rule: not yet failing just after; failing once it lasts, while the host connects.
  const rules = DEFAULT_HEALTH_RULES;
  const at = Date.parse(since);
  assert.equal(
    runtimeUnreachable({ bus: away.bus, hostConnected: true, now: at, rules }),
    undefined,
  );
  const why = runtimeUnreachable({
    bus: away.bus,
    hostConnected: true,
    now: at + rules.unreachableMs + 1_000,
    rules,
  });
  assert.equal(why?.startsWith(`node-tools cannot reach the bus since ${since}`), true);

  await bus.server.setUsers([runtimeUser!, ...others]);
  const back = await fileUntil(
    "the status saying the bus is back",
    (s) => s.bus?.connected === true,
  );
  assert.ok(Date.parse(back.bus?.since as string) >= at);
  assert.equal(rt.statuses.latest?.bus.connected, true);
});
