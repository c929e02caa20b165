/**
 * Module bundles for the runtime's tests: plain `.mjs` files written into a temporary folder,
 * importing the SDK by the absolute URL of its build (a real module bundles its own copy).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const SDK = import.meta.resolve("@mesh/sdk");

/** Writes `files` (name → source, `SDK` replaced by the SDK's URL) under `dir/<module>/`. */
export async function writeModule(
  dir: string,
  module: string,
  files: Record<string, string>,
): Promise<string[]> {
  const folder = join(dir, module);
  await mkdir(folder, { recursive: true });
  const paths: string[] = [];
  for (const [name, source] of Object.entries(files)) {
    const path = join(folder, name);
    await writeFile(path, source.replaceAll("@SDK@", SDK));
    paths.push(path);
  }
  return paths;
}

/** alpha, entry 1: two plain tools with schemas, and provision get. */
export const ALPHA_TOOLS = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({
      name: "greet",
      description: "Greets someone with the module's configured greeting.",
      input: z.object({ name: z.string().min(1), times: z.number().int().positive().optional() }),
      output: z.object({ text: z.string() }),
      handler: async ({ name, times }, ctx) => {
        const greeting = await ctx.provision.get("config", "greeting");
        return { text: Array(times ?? 1).fill(\`\${greeting}, \${name}\`).join(" ") };
      },
    }),
    defineTool({
      name: "add",
      description: "Adds two numbers.",
      input: z.object({ a: z.number(), b: z.number() }),
      output: z.object({ sum: z.number() }),
      handler: async ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: "value",
      description: "Asks the runtime for one of alpha's values.",
      input: z.object({ kind: z.string(), key: z.string() }),
      handler: async ({ kind, key }, ctx) => ({ value: await ctx.provision.get(kind, key) }),
    }),
  ],
});
`;

/** alpha, entry 2: failures, deadlines, a watch started at load, and a state. */
export const ALPHA_MORE = `
import { defineModule, defineTool, z, ToolError } from "@SDK@";
let abortedWith;
let onAbort;
const aborted = new Promise((resolve) => (onAbort = resolve));
const seen = [];
let onSeen = () => {};
export default defineModule({
  start: async (ctx) => {
    const watch = ctx.provision.watch("config", "greeting");
    const first = await watch.next();
    seen.push(first.value);
    void (async () => {
      for await (const item of watch) { seen.push(item); onSeen(); }
    })();
  },
  tools: [
    defineTool({
      name: "explode",
      description: "Throws.",
      input: z.object({}),
      handler: async () => { throw new Error("kaboom: a secret detail"); },
    }),
    defineTool({
      name: "missing",
      description: "Refuses with NOT_FOUND.",
      input: z.object({ id: z.string() }),
      handler: async ({ id }) => { throw new ToolError("NOT_FOUND", \`no thing \${JSON.stringify(id)}\`); },
    }),
    defineTool({
      name: "overrun",
      description: "Never finishes; notes how its signal ended.",
      input: z.object({}),
      handler: (_input, ctx) => new Promise((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => {
          abortedWith = ctx.signal.reason?.name ?? String(ctx.signal.reason);
          onAbort(abortedWith);
          reject(ctx.signal.reason);
        });
      }),
    }),
    defineTool({
      name: "aborted",
      description: "Answers once an overrun's signal has aborted.",
      input: z.object({}),
      handler: async () => ({ reason: await aborted }),
    }),
    defineTool({
      name: "seen",
      description: "What the watch started at load has handed, once there are at least count items.",
      input: z.object({ count: z.number().int().positive() }),
      handler: async ({ count }, ctx) => {
        while (seen.length < count && !ctx.signal.aborted) {
          await new Promise((resolve) => { onSeen = resolve; ctx.signal.addEventListener("abort", resolve); });
        }
        return { seen };
      },
    }),
    defineTool({
      name: "first",
      description: "Watches the greeting, takes the first item and leaves the loop.",
      input: z.object({}),
      handler: async (_input, ctx) => {
        for await (const item of ctx.provision.watch("config", "greeting")) return item;
      },
    }),
    defineTool({
      name: "note",
      description: "Writes and reads back a note in alpha's own state.",
      input: z.object({ key: z.string(), text: z.string() }),
      handler: async ({ key, text }, ctx) => {
        const notes = ctx.state("notes");
        await notes.put(key, { text });
        await notes.put(key + "-null", null);
        return {
          read: await notes.get(key),
          keys: await notes.keys(),
          // A key never written is undefined, a stored null is null: the answer keeps them apart.
          missing: (await notes.get(key + "-never")) === undefined,
          storedNull: (await notes.get(key + "-null")) === null,
        };
      },
    }),
    defineTool({
      name: "warn",
      description: "Says a condition.",
      input: z.object({ message: z.string() }),
      handler: async ({ message }, ctx) => { await ctx.condition("disk", "warning", message); return {}; },
    }),
    defineTool({
      name: "log",
      description: "Logs a line at info and one at warn.",
      input: z.object({ text: z.string() }),
      handler: async ({ text }, ctx) => { ctx.log.info(text); ctx.log.warn(\`careful: \${text}\`); return {}; },
    }),
  ],
});
`;

/** beta: tries to reach alpha's values every way it can, crashes on request, counts echoes. */
export const BETA = `
import { parentPort } from "node:worker_threads";
import { defineModule, defineTool, z } from "@SDK@";
let echoes = 0;
const attempt = async (fn) => { try { return { got: await fn() }; } catch (e) { return { code: e.code ?? "ERROR", message: e.message }; } };
export default defineModule({
  tools: [
    defineTool({
      name: "steal",
      description: "Tries to obtain alpha's greeting.",
      input: z.object({}),
      handler: async (_input, ctx) => {
        const viaSdk = await attempt(() => ctx.provision.get("config", "greeting"));
        const viaState = await attempt(() => ctx.state("alpha/notes").get("k"));
        const viaWatch = await attempt(async () => (await ctx.provision.watch("config", "greeting").next()).value);
        // Straight onto the port, naming alpha every way a message could.
        const raw = await new Promise((resolve) => {
          const id = 900001;
          const onMessage = (m) => { if (m && m.id === id) { parentPort.off("message", onMessage); resolve(m); } };
          parentPort.on("message", onMessage);
          parentPort.postMessage({ v: 1, t: "ask", id, op: "provision.get", module: "alpha",
            params: { kind: "config", key: "greeting", module: "alpha" } });
        });
        return { viaSdk, viaState, viaWatch, raw };
      },
    }),
    defineTool({
      name: "crash",
      description: "Ends its worker.",
      input: z.object({}),
      handler: async () => { process.exit(3); },
    }),
    defineTool({
      name: "echo",
      description: "Echoes and counts.",
      input: z.object({}).passthrough(),
      handler: async (input) => { echoes += 1; return input; },
    }),
    defineTool({
      name: "count",
      description: "How many echoes ran.",
      input: z.object({}),
      handler: async () => ({ echoes }),
    }),
  ],
});
`;

/** gamma: a handler that blocks its event loop. */
export const GAMMA = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({ name: "block", description: "Blocks forever.", input: z.object({}),
      handler: async () => { for (;;) {} } }),
    defineTool({ name: "ok", description: "Answers.", input: z.object({}), handler: async () => ({ ok: true }) }),
    defineTool({ name: "hog", description: "Allocates until its worker's memory limit ends it.", input: z.object({}),
      // It yields between allocations, so its worker answers heartbeats: on a loaded machine a
      // loop that never yields is judged hung before it reaches the limit.
      handler: async () => { const kept = []; for (;;) { kept.push(new Array(1e6).fill(kept.length)); await new Promise((r) => setImmediate(r)); } } }),
    defineTool({ name: "fault", description: "Throws outside any handler.", input: z.object({}),
      handler: async () => { setTimeout(() => { throw new Error("gamma fault"); }, 0); return {}; } }),
    defineTool({ name: "peek", description: "Reads alpha's notes, which gamma declares it reads, and tries to write them.",
      input: z.object({}),
      handler: async (_input, ctx) => {
        const notes = ctx.state("alpha/notes");
        const read = await notes.get("k");
        let write;
        try { await notes.put("k", "overwritten"); write = "written"; } catch (e) { write = e.code; }
        return { read, write };
      } }),
  ],
});
`;

/** delta: throws while loading. */
export const DELTA = `
throw new Error("delta cannot load: its database is missing");
`;

/** steady: answers, and says which process it runs in. */
export const STEADY = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({ name: "ping", description: "Answers.", input: z.object({}).passthrough(),
      handler: async (input) => ({ pid: process.pid, input }) }),
    defineTool({ name: "slow", description: "Answers after ms.", input: z.object({ ms: z.number() }),
      handler: async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return { waited: ms }; } }),
  ],
});
`;

/** hoarder: holds Buffers without bound, 8 MiB at a time, outside its V8 heap. */
export const HOARDER = `
import { defineModule, defineTool, z } from "@SDK@";
const kept = [];
export default defineModule({
  tools: [
    defineTool({ name: "hoard", description: "Allocates Buffers until stopped.", input: z.object({}),
      handler: async () => {
        for (;;) {
          kept.push(Buffer.alloc(8 * 1024 * 1024, 1));
          await new Promise((r) => setTimeout(r, 5));
        }
      } }),
    defineTool({ name: "ok", description: "Answers.", input: z.object({}), handler: async () => ({ ok: true }) }),
  ],
});
`;

/** killer: signals the runtime's own process, its group, or its host, as asked. */
export const KILLER = `
import { defineModule, defineTool, z } from "@SDK@";
export default defineModule({
  tools: [
    defineTool({ name: "kill", description: "Signals a pid.", input: z.object({ target: z.enum(["self", "group", "parent", "raw"]) }),
      handler: async ({ target }) => {
        if (target === "self") process.kill(process.pid, "SIGKILL");
        if (target === "group") process.kill(0, "SIGKILL");
        if (target === "parent") process.kill(process.ppid, "SIGTERM");
        if (target === "raw") process._kill(process.pid, 9);
        return { survived: true };
      } }),
    defineTool({ name: "restore", description: "Tries to put the original process.kill back.", input: z.object({}),
      handler: async () => {
        const before = process.kill;
        try { process.kill = () => true; } catch (e) { /* strict mode */ }
        try { delete process.kill; } catch (e) { /* not configurable */ }
        return { same: process.kill === before };
      } }),
    defineTool({ name: "alive", description: "Whether a pid exists (signal 0 is allowed).", input: z.object({}),
      handler: async () => ({ alive: process.kill(process.pid, 0) }) }),
  ],
});
`;
