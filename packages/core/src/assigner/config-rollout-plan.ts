/**
 * A config value's rollout (issue 22 item 4, decision 0131): `mesh config set <module> <key>
 * <value> --rollout` moves the value through the module's waves. What moves is each node's own
 * value (`<module>.<key>.<node>` in mesh-config): the assigner writes it for the nodes of a wave,
 * and the next wave only once every node of the one before has run the value healthy for
 * `min-healthy` — its host says which value its module sees (`have.config`) and since when, on its
 * own clock, and its heartbeats say what time it is there (as for a build, decision 0130). Once
 * every wave held, the value becomes the mesh-wide one and the nodes' values written for it go.
 * A node failing in its wave halts it: every node value written for it goes at once, so every
 * node is back on the mesh-wide value, the one the whole mesh ran before.
 *
 * Pure, like the rest of the assigner: derived from the buckets at each pass (the request, the
 * record written before, mesh-config as it stands, the reports and heartbeats); a rerun writes
 * nothing, and a restarted assigner continues where the record says.
 */
import {
  Bucket,
  configKey,
  nodeModuleKey,
  parseConfigKey,
  type ConfigRollout,
  type ConfigRolloutRequest,
  type ConfigValue,
  type ResolvedRolloutPolicy,
} from "@mesh/protocol";
import { canonicalJson, fingerprintOf } from "../fingerprint.js";
import type { ModuleIndex } from "./model.js";
import { placedNodes } from "./rollout-plan.js";
import { orderNodes, resolveRolloutPolicy } from "./rollout-policy.js";
import type { AssignerSnapshot } from "./snapshot.js";
import { gateHolds, notStarted, runOnNode, stepWaves, type NodeRun } from "./wave-step.js";

/** One write of mesh-config or mesh-config-waves a config rollout makes. */
export type ConfigRolloutWrite =
  | {
      readonly bucket: typeof Bucket.config;
      readonly key: string;
      readonly value: ConfigValue | undefined;
    }
  | {
      readonly bucket: typeof Bucket.configWaves;
      readonly key: string;
      readonly value: ConfigRollout | undefined;
    };

/** A config rollout after this pass: its record, and the mesh-config writes it makes now. */
export interface ConfigPlan {
  readonly record: ConfigRollout;
  /** Only what differs from mesh-config as it stands, mesh-wide values first. */
  readonly writes: readonly ConfigRolloutWrite[];
}

interface Ctx {
  readonly snapshot: AssignerSnapshot;
  readonly module: string;
  readonly key: string;
  readonly request: ConfigRolloutRequest;
  readonly fingerprint: string;
  /** The nodes the value reaches, in the order it reaches them. */
  readonly nodes: readonly string[];
  readonly policy: ResolvedRolloutPolicy;
}

/** Every config rollout requested, by `<module>.<key>`. */
export function planConfigRollouts(
  snapshot: AssignerSnapshot,
  index: ReadonlyMap<string, ModuleIndex>,
): Map<string, ConfigPlan> {
  const out = new Map<string, ConfigPlan>();
  if (snapshot.configRollouts.size === 0) return out;
  const placed = placedNodes(snapshot);
  for (const [rk, request] of [...snapshot.configRollouts].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const parsed = parsedKey(rk);
    if (parsed === undefined) continue;
    const { module, key } = parsed;
    // A node with a value of its operator's own keeps it: a mesh-wide value never reached it.
    const nodes = (placed.get(module) ?? []).filter((n) => {
      const own = snapshot.own.config.get(configKey(module, key, n));
      return own === undefined || own.rollout !== undefined;
    });
    const policy = resolveRolloutPolicy({
      override: snapshot.rolloutPolicies.get(module)?.policy,
      manifest: index.get(module)?.newest?.manifest.rollout,
      nodes: nodes.length,
    });
    const seed = `${key}@${request.at}`;
    const ctx: Ctx = {
      snapshot,
      module,
      key,
      request,
      fingerprint: fingerprintOf(request.value),
      nodes: orderNodes(nodes, policy.order, seed, snapshot.presence),
      policy,
    };
    out.set(rk, planOne(ctx));
  }
  return out;
}

function parsedKey(rk: string): { module: string; key: string } | undefined {
  try {
    const parsed = parseConfigKey(rk);
    return parsed.node === undefined ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function planOne(ctx: Ctx): ConfigPlan {
  const { snapshot, module, key, request } = ctx;
  const rk = configKey(module, key);
  const before = snapshot.own.configWaves.get(rk);
  const record = before?.request === request.at ? before : fresh(ctx);
  const steer = request.steer;
  if (record.status === "failed" || record.status === "aborted") return halted(ctx, record);
  if (record.status === "done") return { record, writes: finish(ctx) };
  if (steer?.action === "abort") {
    const given = ctx.nodes.filter((n) => givenTo(ctx, n));
    const failed = {
      reason: `aborted by ${steer.by}`,
      nodes: given.map((node) => ({ node, error: "aborted" })),
    };
    return halted(ctx, { ...record, status: "aborted", failed, policy: ctx.policy });
  }
  const given = new Set(ctx.nodes.filter((n) => givenTo(ctx, n)));
  // A node that runs nothing of the module has nothing to lose: it is admitted at once.
  const free = ctx.nodes.filter((n) => !given.has(n) && !runsModule(ctx, n));
  const admitted = new Set(
    [...record.admitted, ...given, ...free].filter((n) => ctx.nodes.includes(n)),
  );
  const input = {
    nodes: ctx.nodes,
    policy: ctx.policy,
    steer,
    now: snapshot.now,
    subject: subjectOf(ctx),
    command: (word: "resume" | "promote") => `mesh rollout ${word} ${module} --config ${key}`,
  };
  // Stepped until nothing moves: a node may see the value already (a request before of the same
  // value), so a wave just given can be proven, or failing, in this very pass — a rerun over the
  // writes must find nothing left to do.
  let current = record;
  for (let i = 0; i <= ctx.nodes.length + 1; i++) {
    const runs = new Map([...admitted].map((n) => [n, runOf(ctx, current, n)]));
    const failed = failedOf(ctx, current, runs);
    if (failed !== undefined) return failed;
    // The gate: the last wave, and any node given the value that the record does not admit (a
    // record write lost), each proven (or failing within the tolerance).
    const lost = [...given].filter((n) => !current.admitted.includes(n));
    const held = gateHolds([...current.waveNodes, ...lost], runs);
    const step = stepWaves(input, current, admitted, held);
    const moved = step.record.wave !== current.wave || step.record.status !== current.status;
    current = step.record;
    if (!moved) break;
  }
  if (current.status === "done") return { record: current, writes: finish(ctx) };
  return { record: current, writes: give(ctx, admitted) };
}

/** The halt, when more nodes fail than the policy tolerates. */
function failedOf(
  ctx: Ctx,
  record: ConfigRollout,
  runs: ReadonlyMap<string, NodeRun>,
): ConfigPlan | undefined {
  const failing = [...runs].filter(([, r]) => r.kind === "failing");
  if (failing.length <= ctx.policy.maxFailing) return undefined;
  const nodes = failing.map(([node, r]) => ({ node, error: r.kind === "failing" ? r.error : "" }));
  const reason = nodes.map((n) => `${n.node}: ${n.error}`).join("; ");
  const admitted = [...runs.keys()].sort();
  return halted(ctx, {
    ...record,
    admitted,
    policy: ctx.policy,
    status: "failed",
    failed: { reason, nodes },
  });
}

/** A new rollout of the request: nothing admitted yet. */
function fresh(ctx: Ctx): ConfigRollout {
  return {
    module: ctx.module,
    key: ctx.key,
    value: ctx.request.value,
    fingerprint: ctx.fingerprint,
    request: ctx.request.at,
    by: ctx.request.by,
    ...notStarted(ctx.policy, ctx.snapshot.now),
  };
}

function halted(ctx: Ctx, record: ConfigRollout): ConfigPlan {
  const waiting = `nothing: halted; every node is back on the mesh-wide value; once fixed, \`mesh config set ${ctx.module} ${ctx.key} <value> --rollout\` again`;
  return { record: { ...record, waiting }, writes: takeBack(ctx) };
}

/** The value `<key>="…"` as the reasons name it. */
function subjectOf(ctx: Ctx): string {
  const text = canonicalJson(ctx.request.value);
  return `${ctx.key}=${text.length > 60 ? `${text.slice(0, 57)}...` : text}`;
}

/** The node value the assigner writes for the request. */
function rolledValue(ctx: Ctx): ConfigValue {
  const { request } = ctx;
  return { value: request.value, by: request.by, at: request.at, rollout: request.at };
}

/** Whether the node's own value is this request's, as the assigner wrote it. */
function givenTo(ctx: Ctx, node: string): boolean {
  const v = ctx.snapshot.own.config.get(configKey(ctx.module, ctx.key, node));
  return v?.rollout === ctx.request.at && fingerprintOf(v.value) === ctx.fingerprint;
}

/** Every node value a config rollout of this key wrote (of this request or one before). */
function rolledKeys(ctx: Ctx): string[] {
  const prefix = `${configKey(ctx.module, ctx.key)}.`;
  const out: string[] = [];
  for (const [k, v] of ctx.snapshot.own.config) {
    if (k.startsWith(prefix) && v.rollout !== undefined) out.push(k);
  }
  return out.sort();
}

/** The admitted nodes' values, where they differ from the request's. */
function give(ctx: Ctx, admitted: ReadonlySet<string>): ConfigRolloutWrite[] {
  const value = rolledValue(ctx);
  const out: ConfigRolloutWrite[] = [];
  for (const node of [...admitted].sort()) {
    const k = configKey(ctx.module, ctx.key, node);
    const current = ctx.snapshot.own.config.get(k);
    if (current === undefined || canonicalJson(current) !== canonicalJson(value)) {
      out.push({ bucket: Bucket.config, key: k, value });
    }
  }
  return out;
}

/** Every node value written for a rollout of the key goes: the mesh-wide value applies again. */
function takeBack(ctx: Ctx): ConfigRolloutWrite[] {
  return rolledKeys(ctx).map((key) => ({ bucket: Bucket.config, key, value: undefined }));
}

/**
 * Done: the value becomes the mesh-wide one (unless the operator set a newer one meanwhile), then
 * the node values written for it go. Only while some are left, so once they are gone a done
 * rollout writes nothing, whatever the operator does with the value after.
 */
function finish(ctx: Ctx): ConfigRolloutWrite[] {
  const taken = takeBack(ctx);
  if (taken.length === 0) return [];
  const k = configKey(ctx.module, ctx.key);
  const meshWide = ctx.snapshot.own.config.get(k);
  const { request } = ctx;
  const put: ConfigRolloutWrite[] =
    meshWide !== undefined && meshWide.at > request.at
      ? []
      : [
          {
            bucket: Bucket.config,
            key: k,
            value: { value: request.value, by: request.by, at: request.at },
          },
        ];
  return [...put, ...taken];
}

/** Whether the node runs the module (its host reports it, and not stopped). */
function runsModule(ctx: Ctx, node: string): boolean {
  const current = ctx.snapshot.have.get(nodeModuleKey(node, ctx.module))?.current;
  return current !== undefined && current.health !== "stopped";
}

/** How one admitted node runs the value (decision 0131; a build's is decision 0130's). */
function runOf(ctx: Ctx, record: ConfigRollout, node: string): NodeRun {
  const current = ctx.snapshot.have.get(nodeModuleKey(node, ctx.module))?.current;
  const config = current?.config;
  const seen =
    current !== undefined && config !== undefined && config.values[ctx.key] === ctx.fingerprint;
  const startedAt = Date.parse(config?.since ?? "");
  return runOnNode({
    policy: ctx.policy,
    record,
    node,
    presence: ctx.snapshot.presence.get(node),
    run: seen
      ? { ...current, healthySince: Math.max(Date.parse(current.since), startedAt), startedAt }
      : undefined,
    late: "not healthy on the value",
  });
}
