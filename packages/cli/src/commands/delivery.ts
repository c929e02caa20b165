/**
 * The operator's delivery verbs: registering modules, following their builds, saying where they
 * run (assign, put) and reading what the assigner decided (wants, differences, asks).
 */
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  directoryDigest,
  readSourceManifest,
  registerModule,
  parseSourceArgument,
} from "@mesh/delivery";
import {
  Bucket,
  ErrorCode,
  MeshError,
  buildKey,
  checkName,
  targetModuleKey,
  type Build,
  type Candidate,
  type Target,
} from "@mesh/protocol";
import { connectToMesh, type FindMeshOptions } from "../find-mesh.js";
import { unputMessage } from "./retry.js";
import { ExitCode, printJson } from "../output.js";

export interface VerbOptions extends FindMeshOptions {
  readonly json?: boolean;
}

const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** Every value of a bucket (under a key pattern), as it stands. */
export async function readAll<T>(bucket: KvBucket<T>, key?: string): Promise<Map<string, T>> {
  const values = new Map<string, T>();
  const ac = new AbortController();
  try {
    for await (const e of bucket.watch({
      signal: ac.signal,
      ...(key === undefined ? {} : { key }),
    })) {
      if (e.type === "current") break;
      if (e.type === "put") values.set(e.key, e.value);
      else values.delete(e.key);
    }
  } finally {
    ac.abort();
  }
  return values;
}

function target(options: { node?: string; all?: boolean }, verb: string): Target {
  if (options.all === true && options.node !== undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `mesh ${verb} takes --node N or --all, not both; pick one`,
    );
  }
  if (options.all === true) return { all: true };
  if (options.node !== undefined) return { node: checkName("node", options.node) };
  throw new MeshError(
    ErrorCode.USAGE,
    `mesh ${verb} needs --node N (one node) or --all (every node)`,
  );
}

const by = (bus: MeshBus): string => bus.credential.user;

// ---------------------------------------------------------------------------------------------
// mesh module add|list|show

export interface ModuleAddOptions extends VerbOptions {
  readonly wait?: boolean;
  readonly timeout?: number;
}

export async function moduleAdd(spec: string, options: ModuleAddOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const { registration, manifest } = await registerModule(bus, spec, { by: by(bus) });
  if (options.json !== true)
    out(`registered ${registration.module} from ${describeSource(registration.source)}`);
  if (options.wait !== true) {
    if (options.json === true) printJson({ ok: true, registration, manifest });
    return ExitCode.ok;
  }
  const build = await followBuild(bus, spec, registration.module, options);
  if (options.json === true) printJson({ ok: build.status === "built", registration, build });
  if (build.status === "failed") {
    if (options.json !== true) {
      out(`build ${build.build} failed: ${build.error ?? "see the log"}`);
      out(build.log);
    }
    return ExitCode.failed;
  }
  if (options.json !== true)
    out(
      `built ${registration.module} ${build.build}: ${build.bundles.map((b) => `${b.name} ${b.digest.slice(0, 12)} (${b.size} bytes)`).join(", ")}`,
    );
  return ExitCode.ok;
}

/** Waits for the candidate of the source as it is now, then for its build, saying each step. */
async function followBuild(
  bus: MeshBus,
  spec: string,
  module: string,
  options: ModuleAddOptions,
): Promise<Build> {
  const source = await parseSourceArgument(spec);
  const revision =
    source.kind === "directory"
      ? await directoryDigest(source.path)
      : (await readSourceManifest(source)).revision;
  const signal = AbortSignal.timeout(options.timeout ?? 600_000);
  const say = (line: string): void => {
    if (options.json !== true) process.stderr.write(`${line}\n`);
  };
  say(`waiting for the indexer to write a candidate of ${module}…`);
  const candidates = await KvBucket.open(bus, Bucket.candidates);
  let candidate: Candidate | undefined;
  try {
    for await (const e of candidates.watch({ key: `${module}.*`, signal })) {
      if (
        e.type === "put" &&
        e.value.revision === revision &&
        (candidate === undefined || e.value.seq > candidate.seq)
      )
        candidate = e.value;
      if ((e.type === "current" || e.type === "put") && candidate !== undefined) break;
    }
  } catch (error) {
    throw timedOut(
      error,
      `the indexer wrote no candidate of ${module} at this revision; check that \`mesh indexer\` runs (mesh up starts it)`,
    );
  }
  if (candidate === undefined) throw timedOut(undefined, `no candidate of ${module}`);
  say(`candidate ${candidate.seq}; waiting for the builder…`);
  const builds = await KvBucket.open(bus, Bucket.builds);
  let seen = "";
  try {
    for await (const e of builds.watch({ key: `${module}.*`, signal })) {
      if (e.type !== "put" || e.value.candidate !== candidate.seq) continue;
      if (e.value.status !== seen) {
        seen = e.value.status;
        say(`build ${e.value.build}: ${e.value.status}`);
      }
      if (e.value.status !== "building") return e.value;
    }
  } catch (error) {
    throw timedOut(
      error,
      `the build of ${module} candidate ${candidate.seq} did not finish; check that \`mesh builder\` runs`,
    );
  }
  throw timedOut(undefined, `the build of ${module} candidate ${candidate.seq}`);
}

function timedOut(cause: unknown, what: string): MeshError {
  return new MeshError(ErrorCode.TIMEOUT, `${what} (waited --timeout ms)`, { cause });
}

function describeSource(source: {
  kind: string;
  path?: string;
  url?: string;
  ref?: string;
}): string {
  switch (source.kind) {
    case "directory":
      return `folder ${source.path ?? ""}`;
    case "git":
      return `git ${source.url ?? ""}#${source.ref ?? ""}`;
    default:
      return `archive ${source.url ?? ""}`;
  }
}

export async function moduleList(options: VerbOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const modules = await readAll(await KvBucket.open(bus, Bucket.modules));
  const builds = await readAll(await KvBucket.open(bus, Bucket.builds));
  const latest = new Map<string, Build>();
  for (const b of builds.values()) {
    const l = latest.get(b.module);
    if (l === undefined || b.candidate > l.candidate) latest.set(b.module, b);
  }
  const rows = [...modules.values()].map((r) => ({
    ...r,
    latestBuild: latest.get(r.module) ?? null,
  }));
  if (options.json === true) {
    printJson({ ok: true, modules: rows });
    return ExitCode.ok;
  }
  if (rows.length === 0) out("no modules are registered; add one with `mesh module add <folder>`");
  for (const r of rows) {
    const b = r.latestBuild;
    out(
      `${r.module}  ${describeSource(r.source)}  ${b === null ? "not built yet" : `${b.build} ${b.status}`}`,
    );
  }
  return ExitCode.ok;
}

export async function moduleShow(module: string, options: VerbOptions): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connectToMesh(options);
  const registration = await (await KvBucket.open(bus, Bucket.modules)).get(module);
  if (registration === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no module ${JSON.stringify(module)} is registered; see \`mesh module list\``,
      { module },
    );
  }
  const candidates = [
    ...(await readAll(await KvBucket.open(bus, Bucket.candidates), `${module}.*`)).values(),
  ];
  const builds = [
    ...(await readAll(await KvBucket.open(bus, Bucket.builds), `${module}.*`)).values(),
  ].sort((a, b) => a.candidate - b.candidate);
  const wants = [...(await readAll(await KvBucket.open(bus, Bucket.wants))).entries()].filter(
    ([k]) => k.endsWith(`.${module}`),
  );
  if (options.json === true) {
    printJson({
      ok: true,
      registration: registration.value,
      candidates,
      builds,
      wants: Object.fromEntries(wants),
    });
    return ExitCode.ok;
  }
  out(
    `${module}: ${describeSource(registration.value.source)}, registered by ${registration.value.by} at ${registration.value.at}`,
  );
  for (const c of candidates) out(`  candidate ${c.seq}: ${c.revision}`);
  for (const b of builds)
    out(`  build ${b.build}: ${b.status}${b.error === undefined ? "" : ` — ${b.error}`}`);
  for (const [k, w] of wants)
    out(`  wanted on ${k.split(".")[0] ?? ""}: ${w.build} (${w.rule}: ${w.reason})`);
  return ExitCode.ok;
}

// ---------------------------------------------------------------------------------------------
// mesh builds [module]

export async function buildsVerb(
  module: string | undefined,
  options: VerbOptions,
): Promise<ExitCode> {
  if (module !== undefined) checkName("module", module);
  await using bus = await connectToMesh(options);
  const builds = [
    ...(
      await readAll(
        await KvBucket.open(bus, Bucket.builds),
        module === undefined ? undefined : `${module}.*`,
      )
    ).values(),
  ].sort((a, b) =>
    a.module === b.module ? a.candidate - b.candidate : a.module < b.module ? -1 : 1,
  );
  if (options.json === true) {
    printJson({ ok: true, builds });
    return ExitCode.ok;
  }
  if (builds.length === 0) out(`no builds${module === undefined ? "" : ` of ${module}`} yet`);
  for (const b of builds) {
    const ms = b.timings.ms === undefined ? "" : ` in ${Math.round(b.timings.ms)} ms`;
    out(`${b.module} ${b.build}: ${b.status}${ms}${b.error === undefined ? "" : ` — ${b.error}`}`);
    if (b.status === "failed" && b.log !== "")
      for (const line of b.log.split("\n")) out(`    ${line}`);
  }
  return ExitCode.ok;
}

// ---------------------------------------------------------------------------------------------
// mesh assign|unassign, put|unput

export interface TargetOptions extends VerbOptions {
  readonly node?: string;
  readonly all?: boolean;
}

export async function assignVerb(
  module: string,
  options: TargetOptions,
  remove = false,
): Promise<ExitCode> {
  const key = targetModuleKey(target(options, remove ? "unassign" : "assign"), module);
  await using bus = await connectToMesh(options);
  const bucket = await KvBucket.open(bus, Bucket.assignments);
  if (remove) await bucket.delete(key);
  else await bucket.put(key, { by: by(bus), at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, key, assigned: !remove });
  else out(remove ? `unassigned ${key}` : `assigned ${key}; the assigner writes the wants`);
  return ExitCode.ok;
}

export interface PutOptions extends VerbOptions {
  readonly node?: string;
  readonly why?: string;
}

export async function putVerb(
  module: string,
  build: string | undefined,
  options: PutOptions,
): Promise<ExitCode> {
  const t: Target =
    options.node === undefined ? { all: true } : { node: checkName("node", options.node) };
  const key = targetModuleKey(t, module);
  await using bus = await connectToMesh(options);
  const puts = await KvBucket.open(bus, Bucket.puts);
  if (build === undefined) {
    await puts.delete(key);
    if (options.json === true) printJson({ ok: true, key, put: null });
    else out(await unputMessage(bus, key, module, options.node));
    return ExitCode.ok;
  }
  const record = await (await KvBucket.open(bus, Bucket.builds)).get(buildKey(module, build));
  if (record === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${module} has no build ${JSON.stringify(build)}; see \`mesh builds ${module}\``,
      { module },
    );
  }
  if (record.value.status !== "built") {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${module} build ${build} is ${record.value.status}, and only a built build can be put; pick one \`mesh builds ${module}\` lists as built`,
      { module },
    );
  }
  await puts.put(key, { build, by: by(bus), why: options.why ?? "", at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, key, put: build });
  else
    out(`put ${module} on ${"all" in t ? "every node" : t.node} to ${build} until \`mesh unput\``);
  return ExitCode.ok;
}

// ---------------------------------------------------------------------------------------------
// mesh wants, differences, asks, answer

export interface ListOptions extends VerbOptions {
  readonly node?: string;
  readonly module?: string;
}

const matches = (key: string, options: ListOptions): boolean => {
  const [node, module] = key.split(".");
  return (
    (options.node === undefined || node === options.node) &&
    (options.module === undefined || module === options.module)
  );
};

export async function wantsVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const wants = [...(await readAll(await KvBucket.open(bus, Bucket.wants))).entries()]
    .filter(([k]) => matches(k, options))
    .sort();
  if (options.json === true) {
    printJson({ ok: true, wants: Object.fromEntries(wants) });
    return ExitCode.ok;
  }
  if (wants.length === 0)
    out("nothing is wanted; assign a module with `mesh assign <module> --all`");
  for (const [key, w] of wants) out(`${key}: ${w.build}  [${w.rule}] ${w.reason}`);
  return ExitCode.ok;
}

export async function differencesVerb(options: ListOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const diffs = [...(await readAll(await KvBucket.open(bus, Bucket.differences))).entries()]
    .filter(([k]) => matches(k, options))
    .sort();
  if (options.json === true) {
    printJson({ ok: true, differences: Object.fromEntries(diffs) });
    return ExitCode.ok;
  }
  if (diffs.length === 0) out("no differences: every node has what it should");
  for (const [key, d] of diffs) {
    out(`${key}: want ${d.want ?? "-"}, composed ${d.composed ?? "-"}, have ${d.have ?? "-"}`);
    for (const r of d.reasons) out(`    ${r}`);
  }
  return ExitCode.ok;
}

export async function asksVerb(options: VerbOptions): Promise<ExitCode> {
  await using bus = await connectToMesh(options);
  const asks = await readAll(await KvBucket.open(bus, Bucket.asks));
  const answers = await readAll(await KvBucket.open(bus, Bucket.answers));
  const rows = [...asks.values()].map((a) => ({ ...a, answer: answers.get(a.id)?.answer ?? null }));
  if (options.json === true) {
    printJson({ ok: true, asks: rows });
    return ExitCode.ok;
  }
  if (rows.length === 0) out("no asks wait for an answer");
  for (const a of rows)
    out(
      `${a.id}: ${a.what} (nodes: ${a.nodes.join(", ")})${a.answer === null ? " — answer with `mesh answer " + a.id + " yes|no`" : ` — answered ${a.answer}`}`,
    );
  return ExitCode.ok;
}

export async function answerVerb(
  id: string,
  answer: string,
  options: VerbOptions,
): Promise<ExitCode> {
  checkName("ask", id);
  if (answer !== "yes" && answer !== "no") {
    throw new MeshError(
      ErrorCode.USAGE,
      `the answer ${JSON.stringify(answer)} is not yes or no; write \`mesh answer ${id} yes\` or \`… no\``,
    );
  }
  await using bus = await connectToMesh(options);
  const ask = await (await KvBucket.open(bus, Bucket.asks)).get(id);
  if (ask === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no ask ${JSON.stringify(id)} waits for an answer; see \`mesh asks\``,
      { key: id },
    );
  }
  await (
    await KvBucket.open(bus, Bucket.answers)
  ).put(id, { answer, by: by(bus), at: new Date().toISOString() });
  if (options.json === true) printJson({ ok: true, id, answer });
  else out(`answered ${answer} to ${id}: ${ask.value.what}`);
  return ExitCode.ok;
}
