/**
 * Registering modules and following their builds: `mesh module add|list|show|remove` and `mesh builds`.
 */
import { Option, type Command } from "commander";
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
  checkName,
  type Build,
  type Candidate,
} from "@mesh/protocol";
import { readAll } from "../../read-bucket.js";
import {
  ExitCode,
  act,
  answer,
  connect,
  meshVerb,
  out,
  MAX_TIMER_MS,
  positiveNumber,
  printJson,
  type MeshOptions,
} from "../../verb.js";
import { requireModule } from "../../known.js";
import { by } from "./assign.js";

export function registerModuleVerbs(program: Command): void {
  const module = program.command("module").description("Register modules and look at them.");
  act(
    meshVerb(
      module,
      "add",
      "Register a module from a folder, <git url>#<ref>, or a .tar.gz; its manifest is checked at once.",
    )
      .argument("<source>", "a folder with mesh.yaml, <git url or path>#<ref>, or an archive")
      .option("--wait", "follow the build of this revision until it is built or failed")
      .addOption(
        new Option("--timeout <ms>", "how long --wait waits (default 600000)").argParser(
          positiveNumber("--timeout", "600000", MAX_TIMER_MS),
        ),
      ),
    moduleAdd,
  );
  act(meshVerb(module, "list", "Every registered module with its latest build."), moduleList);
  act(
    meshVerb(module, "show", "A module's source, candidates, builds and wants.").argument(
      "<module>",
    ),
    moduleShow,
  );
  act(
    meshVerb(
      module,
      "remove",
      "Unregister a module: its folder or ref is no longer followed. Refused while it is assigned, unless --unassign.",
    )
      .argument("<module>")
      .option("--unassign", "take its assignments away first (it then stops everywhere)"),
    moduleRemove,
  );
  act(
    meshVerb(program, "builds", "Builds, with the log of each failed one.").argument(
      "[module]",
      "only this module's builds",
    ),
    buildsVerb,
  );
}

export interface ModuleAddOptions extends MeshOptions {
  readonly wait?: boolean;
  readonly timeout?: number;
}

export async function moduleAdd(spec: string, options: ModuleAddOptions): Promise<ExitCode> {
  await using bus = await connect(options);
  const { registration, manifest, message } = await addModule(bus, spec);
  if (options.json !== true) out(message);
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

/** `mesh module add` on a bus (without --wait): the view's page does the same. */
export async function addModule(
  bus: MeshBus,
  spec: string,
): Promise<Awaited<ReturnType<typeof registerModule>> & { message: string }> {
  const registered = await registerModule(bus, spec, { by: by(bus) });
  const { registration } = registered;
  return {
    ...registered,
    message: `registered ${registration.module} from ${describeSource(registration.source)}`,
  };
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

export async function moduleList(options: MeshOptions): Promise<ExitCode> {
  await using bus = await connect(options);
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

export async function moduleShow(module: string, options: MeshOptions): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
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

export interface ModuleRemoveOptions extends MeshOptions {
  readonly unassign?: boolean;
}

export async function moduleRemove(
  module: string,
  options: ModuleRemoveOptions,
): Promise<ExitCode> {
  checkName("module", module);
  await using bus = await connect(options);
  await requireModule(bus, module);
  const assignments = await KvBucket.open(bus, Bucket.assignments);
  const assigned = (await assignments.keys(`*.${module}`)).sort();
  if (assigned.length > 0 && options.unassign !== true) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${module} is still assigned (${assigned.join(", ")}), so removing it would leave it wanted while the mesh no longer follows its source; \`mesh unassign ${module} --all\` (or --node N) first, or pass --unassign`,
      { module },
    );
  }
  for (const key of assigned) await assignments.delete(key);
  await (await KvBucket.open(bus, Bucket.modules)).delete(module);
  return answer(options, { module, removed: true, unassigned: assigned }, () => [
    ...(assigned.length === 0 ? [] : [`unassigned ${assigned.join(", ")}`]),
    `removed ${module}; its builds are kept (\`mesh builds ${module}\`), and \`mesh module add\` registers it again`,
  ]);
}

export async function buildsVerb(
  module: string | undefined,
  options: MeshOptions,
): Promise<ExitCode> {
  if (module !== undefined) checkName("module", module);
  await using bus = await connect(options);
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
