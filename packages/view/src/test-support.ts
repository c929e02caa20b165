/**
 * What the view's tests share: a real bus with the layout, the operator's credential with the
 * operator's real grant (so the view is proven to work with exactly those rights), and a mesh
 * state worth looking at, written as the mesh's processes would write it.
 */
import { createHash } from "node:crypto";
import {
  Bucket,
  Principal,
  askKey,
  buildKey,
  nodeKey,
  nodeModuleKey,
  targetModuleKey,
  toolSubject,
  type Credential,
} from "@mesh/protocol";
import {
  KvBucket,
  MeshBus,
  ensureLayout,
  sayCondition,
  serve,
  type Request,
  type Served,
} from "@mesh/bus";
import { standIn, startTestServer, type TestServer, type TestUser } from "@mesh/bus/testing";
import { operatorGrant } from "@mesh/core";
import { startView, type View } from "./start-view.js";

export const OPERATOR_NODE = "laptop";

export interface TestMesh extends AsyncDisposable {
  readonly server: TestServer;
  /** Every right: what the mesh's own processes write is written with this. */
  readonly admin: MeshBus;
  /** The operator's rights, as `mesh up` grants them: what the view runs with. */
  readonly operator: MeshBus;
  stop(): Promise<void>;
}

const operatorUser = { user: "operator", password: "operator-password-for-tests" };

/** A real bus with the layout; `users` beside the operator's (a runtime's, say). */
export async function startTestMesh(
  options: { readonly users?: readonly TestUser[] } = {},
): Promise<TestMesh> {
  const server = await startTestServer({
    users: [
      { ...operatorUser, permissions: operatorGrant({ node: OPERATOR_NODE }) },
      ...(options.users ?? []),
    ],
  });
  const as = (who: { user: string; password: string }, module: string): Credential => ({
    servers: [server.url],
    user: who.user,
    password: who.password,
    node: OPERATOR_NODE,
    module,
  });
  const admin = await MeshBus.connect(as(server.admin, Principal.controller));
  await ensureLayout(admin);
  const operator = await MeshBus.connect(as(operatorUser, Principal.operator));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await operator.close();
      await admin.close();
      await server.stop();
    })();
    return stopping;
  };
  return { server, admin, operator, stop, [Symbol.asyncDispose]: stop };
}

type Hook = (fn: () => Promise<void>) => void;

/** Filled in by the suite's `before`: read it inside the tests, never at the describe's level. */
export interface ViewSuite {
  readonly mesh: TestMesh;
  /** The view on the mesh as the operator ada runs it. */
  readonly view: View;
}

/**
 * A test mesh (with `users` beside the operator), seeded, and the view on it as ada, started
 * before the suite's tests; `setUp` runs between the seed and the view. After them, `tearDown`
 * first, then the view is closed and the mesh stopped.
 */
export function viewSuite(
  hooks: { readonly before: Hook; readonly after: Hook },
  options: {
    readonly users?: readonly TestUser[];
    readonly setUp?: (mesh: TestMesh) => Promise<void>;
    readonly tearDown?: () => Promise<void>;
  } = {},
): ViewSuite {
  let mesh: TestMesh | undefined;
  let made: ViewSuite | undefined;
  hooks.before(async () => {
    mesh = await startTestMesh(options.users === undefined ? {} : { users: options.users });
    await seedMesh(mesh.admin);
    await options.setUp?.(mesh);
    made = { mesh, view: await startView({ bus: mesh.operator, actor: "ada" }) };
  });
  hooks.after(async () => {
    await options.tearDown?.();
    await made?.view.close();
    await mesh?.stop();
  });
  return standIn("viewSuite", () => made);
}

/** A lowercase hex SHA-256 of a word, for digests that must look real. */
export const digestOf = (word: string): string => createHash("sha256").update(word).digest("hex");

export const NODES = ["laptop", "rack-2"] as const;
export const MODULES = ["board", "counter", "hello", "node-tools"] as const;
export const ASK_ID = "a-board-3";
export const FAILED_BUILD_LOG = [
  "esbuild: bundling src/main.ts",
  '✘ [ERROR] Could not resolve "./missing.js"',
  "    src/main.ts:3:21: note: imported here",
  "1 error",
].join("\n");

/**
 * Writes a small healthy mesh: two nodes present, four modules built, wanted and healthy on
 * them, an open ask, a condition, and a failed build with its log.
 */
export async function seedMesh(admin: MeshBus, now: Date = new Date()): Promise<void> {
  const at = now.toISOString();
  const open = async <B extends Bucket>(bucket: B) => KvBucket.open(admin, bucket);

  const presence = await open(Bucket.presence);
  for (const node of NODES) {
    await presence.put(nodeKey(node), {
      node,
      facts: { hostname: `${node}.local`, os: "linux", arch: "x64", version: "0.1.0" },
      publicKey: "MCowBQYDK2VuAyEA0000000000000000000000000000000000000000000=",
      heartbeat: at,
    });
  }
  for (const module of MODULES) await seedModule(admin, module, at);
  const builds = await open(Bucket.builds);
  await builds.put(buildKey("board", "2-failed"), {
    module: "board",
    build: "2-failed",
    status: "failed",
    candidate: 2,
    bundles: [],
    error: "esbuild could not resolve ./missing.js",
    log: FAILED_BUILD_LOG,
    timings: { started: at, finished: at, ms: 230 },
  });
  const compositions = await open(Bucket.compositions);
  for (const node of NODES) {
    await compositions.put(nodeKey(node), { node, verdict: "ok", wanted: {}, reasons: [] });
  }
  await (
    await open(Bucket.asks)
  ).put(askKey(ASK_ID), {
    id: ASK_ID,
    what: "board 3 reads counter/count, which build 1 did not: allow it?",
    module: "board",
    build: "3-widened",
    nodes: ["laptop"],
    at,
  });
  await sayCondition(admin, {
    module: "assigner",
    name: "set-back",
    level: "warning",
    node: "rack-2",
    message: "counter was set back to 1-aaaa on rack-2: build 2-bbbb failed there",
  });
}

/** One module registered, built once, assigned everywhere, wanted and healthy where it runs. */
async function seedModule(admin: MeshBus, module: (typeof MODULES)[number], at: string) {
  const modules = await KvBucket.open(admin, Bucket.modules);
  const builds = await KvBucket.open(admin, Bucket.builds);
  const wants = await KvBucket.open(admin, Bucket.wants);
  const have = await KvBucket.open(admin, Bucket.have);
  const assignments = await KvBucket.open(admin, Bucket.assignments);
  const build = `1-${digestOf(module).slice(0, 8)}`;
  await modules.put(module, {
    module,
    source: { kind: "directory", path: `/src/examples/${module}` },
    by: "ada",
    at,
  });
  await builds.put(buildKey(module, build), {
    module,
    build,
    status: "built",
    candidate: 1,
    manifestDigest: digestOf(`${module}-manifest`),
    bundles: [{ name: "tools", digest: digestOf(`${module}-tools`), size: 4096 }],
    log: `esbuild: bundling ${module}\ndone in 41ms`,
    timings: { started: at, finished: at, ms: 412 },
  });
  await assignments.put(targetModuleKey({ all: true }, module), { by: "ada", at });
  // board runs on the laptop only; everything else everywhere.
  for (const node of module === "board" ? ["laptop"] : NODES) {
    await wants.put(nodeModuleKey(node, module), {
      build,
      manifestDigest: digestOf(`${module}-manifest`),
      fingerprint: digestOf(`${node}-${module}`).slice(0, 16),
      rule: "newest",
      reason: `the build of ${module}'s newest candidate (1)`,
    });
    await have.put(nodeModuleKey(node, module), {
      build,
      fingerprint: digestOf(`${node}-${module}`).slice(0, 16),
      health: "healthy",
      since: at,
      restarts: 0,
    });
  }
}

/**
 * hello's greet on the operator's node, served as a runtime serves a tool (its service, its
 * subject, its description and input schema in the metadata), answering with `handler`.
 */
export function serveGreet(
  admin: MeshBus,
  tool: {
    readonly description: string;
    readonly input: object;
    readonly handler: (request: Request) => Promise<unknown>;
  },
): Promise<Served> {
  return serve(admin, {
    name: "hello",
    version: "1.0.0",
    endpoints: [
      {
        name: "greet",
        subject: toolSubject(OPERATOR_NODE, "hello", "greet"),
        metadata: { description: tool.description, input: JSON.stringify(tool.input) },
        handler: tool.handler,
      },
    ],
  });
}
