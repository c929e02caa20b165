/**
 * The lifecycle soak (issue 14): random operator actions, drawn from a seed, against a real mesh
 * from `mesh up`. Three modules in a folder of their own — `tally` (tools only, with config),
 * `pulse` (a daemon) and `vault` (a daemon that needs its own secret `token`) — each of which can
 * be edited into a good build or a crashing one. What the operator did is kept in a small model,
 * so a quiet period can be checked against what must hold then.
 */
import { join } from "node:path";
import { KvBucket } from "@mesh/bus";
import { askSecretSet, askSecretUnset } from "@mesh/controller";
import { Bucket, nodeModuleKey, targetModuleKey } from "@mesh/protocol";
import type { DemoMesh, MeshProcessKind } from "./demo-mesh.js";
import { writeModuleFolder, type ModuleSources, type ModuleYaml } from "./module-yaml.js";
import { runMesh } from "./run-mesh.js";

export const SOAK_MODULES = ["tally", "pulse", "vault"] as const;
export type SoakModule = (typeof SOAK_MODULES)[number];

/** A small seeded generator (mulberry32): the same seed draws the same actions. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What the operator has done, as far as what must hold afterwards depends on it. */
export interface SoakModel {
  readonly registered: Set<SoakModule>;
  readonly assigned: Set<SoakModule>;
  /** Modules put to a build on the node. */
  readonly put: Set<SoakModule>;
  /** Whether the source's last edit builds a good (steady) build. */
  readonly good: Map<SoakModule, boolean>;
  /** Edits so far, per module: each makes a new source revision. */
  readonly edits: Map<SoakModule, number>;
  secretSet: boolean;
}

export function newModel(): SoakModel {
  return {
    registered: new Set(),
    assigned: new Set(),
    put: new Set(),
    good: new Map(SOAK_MODULES.map((m) => [m, true])),
    edits: new Map(SOAK_MODULES.map((m) => [m, 0])),
    secretSet: false,
  };
}

const MANIFESTS: Record<SoakModule, ModuleYaml> = {
  tally: {
    module: "tally",
    description: "Counts calls; tools only.",
    tools: true,
    config: { step: { description: "How much each call adds.", default: 1 } },
  },
  pulse: { module: "pulse", description: "A steady daemon.", daemon: "pulse" },
  vault: {
    module: "vault",
    description: "A daemon that needs its token.",
    daemon: "vault",
    ownSecrets: { token: "token.txt" },
  },
};

/** The source of one edit: steady, or crashing at once (a build that fails where it runs). */
function source(module: SoakModule, edit: number, good: boolean): ModuleSources {
  const crash = good ? "" : `throw new Error("${module} edit ${edit} crashes on purpose");\n`;
  if (module === "tally") {
    return {
      tools:
        `// edit ${edit}\nimport { defineModule, defineTool, z } from "@mesh/sdk";\n${crash}` +
        `let total = 0;\nconst count = defineTool({\n  name: "count",\n  description: "Adds one.",\n` +
        `  input: z.object({}),\n  output: z.object({ total: z.number() }),\n` +
        `  handler: () => Promise.resolve({ total: ++total }),\n});\n` +
        `export default defineModule({ tools: [count] });\n`,
    };
  }
  return {
    daemon:
      `// edit ${edit}\n${crash}` +
      `const alive = setInterval(() => undefined, 60_000);\n` +
      `process.once("SIGTERM", () => {\n  clearInterval(alive);\n  process.exit(0);\n});\n`,
  };
}

/** Writes a module's folder as its current edit says. */
export async function writeModule(dir: string, module: SoakModule, model: SoakModel) {
  const code = source(module, model.edits.get(module) ?? 0, model.good.get(module) ?? true);
  await writeModuleFolder(dir, MANIFESTS[module], code);
}

export interface SoakContext {
  readonly mesh: DemoMesh;
  readonly sources: string;
  readonly model: SoakModel;
  readonly random: () => number;
  /** Runs a verb of the built CLI on the mesh's root; throws unless it exits 0. */
  verb(args: readonly string[], input?: string): Promise<string>;
}

export interface SoakAction {
  readonly name: string;
  /** How often it is drawn, relative to the others. */
  readonly weight: number;
  /** Whether it can be done now; a module it would act on is drawn by `run`. */
  readonly can: (model: SoakModel) => boolean;
  /** Does it and says what it did. */
  readonly run: (c: SoakContext) => Promise<string>;
}

const pick = <T>(random: () => number, from: readonly T[]): T =>
  from[Math.floor(random() * from.length)] as T;
const among = (test: (m: SoakModule) => boolean): SoakModule[] => SOAK_MODULES.filter(test);
const at = () => new Date().toISOString();

async function edit(c: SoakContext, good: boolean): Promise<string> {
  const m = pick(c.random, SOAK_MODULES);
  c.model.edits.set(m, (c.model.edits.get(m) ?? 0) + 1);
  c.model.good.set(m, good);
  await writeModule(c.sources, m, c.model);
  return `${good ? "a new build" : "a crashing build"} of ${m}`;
}

/** Assigns `m` to every node, or takes that assignment back: on the bus, then in the model. */
async function assignAll(c: SoakContext, m: SoakModule, assigned: boolean): Promise<string> {
  const assignments = await KvBucket.open(c.mesh.bus, Bucket.assignments);
  const key = targetModuleKey({ all: true }, m);
  if (assigned) {
    await assignments.put(key, { by: "soak", at: at() });
    c.model.assigned.add(m);
  } else {
    await assignments.delete(key);
    c.model.assigned.delete(m);
  }
  return `${assigned ? "assign" : "unassign"} ${m} --all`;
}

/** Every action the soak draws from, with its weight. */
export const SOAK_ACTIONS: readonly SoakAction[] = [
  {
    name: "register",
    weight: 3,
    can: (m) => m.registered.size < SOAK_MODULES.length,
    async run(c) {
      const m = pick(
        c.random,
        among((x) => !c.model.registered.has(x)),
      );
      await c.verb(["module", "add", join(c.sources, m)]);
      c.model.registered.add(m);
      return `mesh module add ${m}`;
    },
  },
  {
    name: "assign",
    weight: 4,
    can: (m) => [...m.registered].some((x) => !m.assigned.has(x)),
    run: (c) =>
      assignAll(
        c,
        pick(
          c.random,
          among((x) => c.model.registered.has(x)),
        ),
        true,
      ),
  },
  {
    name: "unassign",
    weight: 2,
    can: (m) => m.assigned.size > 0,
    run: (c) => assignAll(c, pick(c.random, [...c.model.assigned]), false),
  },
  {
    name: "remove",
    weight: 1,
    can: (m) => m.registered.size > 0,
    async run(c) {
      const m = pick(c.random, [...c.model.registered]);
      await c.verb(["module", "remove", m, "--unassign"]);
      c.model.registered.delete(m);
      c.model.assigned.delete(m);
      return `mesh module remove ${m} --unassign`;
    },
  },
  { name: "new build", weight: 3, can: () => true, run: (c) => edit(c, true) },
  { name: "bad build", weight: 2, can: () => true, run: (c) => edit(c, false) },
  {
    name: "put",
    weight: 2,
    can: (m) => m.registered.size > 0,
    async run(c) {
      const m = pick(c.random, [...c.model.registered]);
      const builds = await KvBucket.open(c.mesh.bus, Bucket.builds);
      const built: string[] = [];
      for (const key of await builds.keys(`${m}.*`)) {
        const b = (await builds.get(key))?.value;
        if (b?.status === "built") built.push(b.build);
      }
      if (built.length === 0) return `put ${m}: no build to put yet`;
      const build = pick(c.random, built.sort());
      await (
        await KvBucket.open(c.mesh.bus, Bucket.puts)
      ).put(nodeModuleKey(c.mesh.node, m), {
        build,
        by: "soak",
        why: "soak",
        at: at(),
      });
      c.model.put.add(m);
      return `put ${m} ${build}`;
    },
  },
  {
    name: "unput",
    weight: 2,
    can: (m) => m.put.size > 0,
    async run(c) {
      const m = pick(c.random, [...c.model.put]);
      await (await KvBucket.open(c.mesh.bus, Bucket.puts)).delete(nodeModuleKey(c.mesh.node, m));
      c.model.put.delete(m);
      return `unput ${m}`;
    },
  },
  {
    name: "retry",
    weight: 1,
    can: (m) => m.registered.size > 0,
    async run(c) {
      const m = pick(c.random, [...c.model.registered]);
      await c.verb(["retry", m, "--node", c.mesh.node]);
      return `mesh retry ${m} --node ${c.mesh.node}`;
    },
  },
  {
    name: "config",
    weight: 1,
    can: (m) => m.registered.has("tally"),
    async run(c) {
      const step = 1 + Math.floor(c.random() * 9);
      await c.verb(["config", "set", "tally", "step", String(step), "--force"]);
      return `mesh config set tally step ${step}`;
    },
  },
  {
    name: "secret set",
    weight: 2,
    can: () => true,
    async run(c) {
      await askSecretSet(c.mesh.bus, { module: "vault", name: "token", value: "s3cret\n" });
      c.model.secretSet = true;
      return "secret set vault token";
    },
  },
  {
    name: "secret unset",
    weight: 1,
    can: (m) => m.secretSet,
    async run(c) {
      await askSecretUnset(c.mesh.bus, { module: "vault", name: "token" });
      c.model.secretSet = false;
      return "secret unset vault token";
    },
  },
  {
    name: "kill",
    weight: 1,
    can: () => true,
    async run(c) {
      const kinds: MeshProcessKind[] = ["assigner", "controller", "indexer", "builder", "host"];
      const kind = pick(c.random, kinds);
      const [pid] = await c.mesh.pidsOf(kind);
      if (pid === undefined) return `kill -9 of the ${kind}: none runs (restarting)`;
      process.kill(pid, "SIGKILL");
      return `kill -9 of the ${kind} (${pid})`;
    },
  },
];

/** Draws the next action that can be done now. */
export function drawAction(model: SoakModel, random: () => number): SoakAction {
  const open = SOAK_ACTIONS.filter((a) => a.can(model));
  let r = random() * open.reduce((sum, a) => sum + a.weight, 0);
  for (const a of open) {
    r -= a.weight;
    if (r < 0) return a;
  }
  return open[open.length - 1] as SoakAction;
}

/** A `SoakContext` whose verbs run the built CLI on `mesh`'s root. */
export function soakContext(
  mesh: DemoMesh,
  sources: string,
  model: SoakModel,
  random: () => number,
): SoakContext {
  return {
    mesh,
    sources,
    model,
    random,
    async verb(args, input) {
      const run = await runMesh(
        [...args, "--root", mesh.root],
        input === undefined ? { deadlineMs: 30_000 } : { input, deadlineMs: 30_000 },
      );
      if (run.code !== 0) {
        throw new Error(`mesh ${args.join(" ")} exited ${run.code}: ${run.stdout}${run.stderr}`);
      }
      return run.stdout;
    },
  };
}
