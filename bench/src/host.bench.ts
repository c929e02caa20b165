/**
 * The host: time from a new composition to every process started, for 1, 10 and 100 modules,
 * against spawning the same number of `node -e` processes directly; and archive
 * fetch + verify + check + unpack throughput against a plain object-store get of the same bytes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "tar";
import { ArtifactStore, KvBucket, MeshBus, ensureLayout } from "@mesh/bus";
import { startTestServer } from "@mesh/bus/testing";
import { fingerprintOf } from "@mesh/core";
import { DEFAULT_ARCHIVE_LIMITS, Host, fetchVerified, unpackBeside } from "@mesh/host";
import {
  Bucket,
  ObjectStore,
  Principal,
  artifactSource,
  bundlePath,
  type Composed,
  type Credential,
  type ProcessResource,
} from "@mesh/protocol";
import { line, perSecond, quantile, timeEach } from "./measure.js";

const NODE = "bench";
const SIZES = [1, 10, 100];
const ROUNDS = 3;
const LONG_RUNNING = "setInterval(() => {}, 1 << 30);";

async function tarOf(files: Record<string, Buffer | string>): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), "mesh-bench-bundle-"));
  try {
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(dir, "src", name, ".."), { recursive: true });
      await writeFile(join(dir, "src", name), content);
    }
    const out = join(dir, "bundle.tgz");
    await create(
      { gzip: true, file: out, cwd: join(dir, "src"), portable: true },
      Object.keys(files).sort(),
    );
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 2));
}

async function main(): Promise<void> {
  const server = await startTestServer();
  const root = await mkdtemp(join(tmpdir(), "mesh-bench-host-"));
  const credential = (module: string): Credential => ({
    servers: [server.url],
    user: server.admin.user,
    password: server.admin.password,
    node: NODE,
    module,
  });
  const admin = await MeshBus.connect(credential(Principal.controller));
  try {
    await ensureLayout(admin);
    const artifacts = await ArtifactStore.open(admin);
    const composed = await KvBucket.open(admin, Bucket.composed);
    await compositionToProcesses({ root, credential, artifacts, composed });
    await archiveThroughput(artifacts);
  } finally {
    await admin.close();
    await server.stop();
    await rm(root, { recursive: true, force: true });
  }
}

interface Setup {
  readonly root: string;
  readonly credential: (module: string) => Credential;
  readonly artifacts: ArtifactStore;
  readonly composed: KvBucket<Composed>;
}

/** Composition to processes started, per size, against spawning as many `node -e` directly. */
async function compositionToProcesses(setup: Setup): Promise<void> {
  const digest = (await setup.artifacts.put(await tarOf({ "main.js": LONG_RUNNING }))).digest;
  const host = await Host.create({
    node: NODE,
    root: setup.root,
    credential: setup.credential(Principal.host),
    pollMs: 50,
    graceMs: 5_000,
    stopProcessesOnStop: true,
    log: () => undefined,
  });
  const running = host.run({ signal: new AbortController().signal });
  let generation = 0;
  for (const size of SIZES) {
    const hostMs: number[] = [];
    const bareMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      generation += 1;
      // A new environment each round, so every process is new to the host.
      const resources = processesOf(size, { root: setup.root, digest, generation });
      hostMs.push(await hostStarts(host, setup.composed, resources));
      bareMs.push(await bareStarts(size));
    }
    console.log(
      line(
        `composition → ${size} process(es) started, median of ${ROUNDS}`,
        quantile(hostMs, 0.5),
        "ms",
        { what: `spawning ${size} node -e directly`, value: quantile(bareMs, 0.5) },
      ),
    );
  }
  await host.stop();
  await running;
}

function processesOf(
  size: number,
  of: { root: string; digest: string; generation: number },
): ProcessResource[] {
  return Array.from({ length: size }, (_, i) => ({
    id: `m${i}.process-p`,
    type: "process",
    name: "p",
    module: `m${i}`,
    source: artifactSource(ObjectStore.artifacts, of.digest),
    digest: of.digest,
    path: bundlePath(of.root, `m${i}`, "main"),
    run: [process.execPath, "main.js"],
    env: { GENERATION: String(of.generation) },
    "restart-on": [],
  }));
}

/** Milliseconds from putting the composition to every process started; then empties the node. */
async function hostStarts(
  host: Host,
  composed: KvBucket<Composed>,
  resources: ProcessResource[],
): Promise<number> {
  const start = process.hrtime.bigint();
  await composed.put(NODE, { node: NODE, resources, fingerprint: fingerprintOf(resources) });
  await until(() => {
    const p = host.processes();
    return p.size === resources.length && resources.every((r) => p.has(r.id));
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await composed.put(NODE, { node: NODE, resources: [], fingerprint: fingerprintOf([]) });
  await until(() => host.processes().size === 0);
  await host.settled();
  return ms;
}

/** Milliseconds to spawn `size` long-running `node -e` processes directly; then kills them. */
async function bareStarts(size: number): Promise<number> {
  const children: ChildProcess[] = [];
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: size }, () => {
      const child = spawn(process.execPath, ["-e", LONG_RUNNING], {
        stdio: "ignore",
        detached: true,
      });
      children.push(child);
      return new Promise((r) => child.once("spawn", r));
    }),
  );
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  await Promise.all(
    children.map((c) => {
      const gone = new Promise((r) => c.once("exit", r));
      c.kill("SIGKILL");
      return gone;
    }),
  );
  return ms;
}

/** Archive fetch + verify + check + unpack against a plain object-store get of the same bytes. */
async function archiveThroughput(artifacts: ArtifactStore): Promise<void> {
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < 64; i++) {
    // Half random (incompressible), half text-like: a bundle is mostly code.
    files[`lib/f${i}.js`] =
      i % 2 === 0 ? randomBytes(128 * 1024) : Buffer.from("x = 1;\n".repeat(18_000));
  }
  const bytes = await tarOf(files);
  const big = (await artifacts.put(bytes)).digest;
  const unpacked = Object.values(files).reduce((n, b) => n + b.length, 0);
  const COUNT = 5;
  const plain = await timeEach(COUNT, async () => {
    await artifacts.get(big);
  });
  const throughRoot = await mkdtemp(join(tmpdir(), "mesh-bench-unpack-"));
  const full = await timeEach(COUNT, async (i) => {
    const r = join(throughRoot, String(i));
    const file = await fetchVerified({
      root: r,
      module: "big",
      source: artifactSource(ObjectStore.artifacts, big),
      digest: big,
      fetch: (d, o) => artifacts.get(d, o),
    });
    await unpackBeside({
      file,
      path: bundlePath(r, "big", "main"),
      digest: big,
      module: "big",
      limits: DEFAULT_ARCHIVE_LIMITS,
    });
  });
  await rm(throughRoot, { recursive: true, force: true });
  const mb = bytes.length / 1024 / 1024;
  console.log(
    line(
      `archive fetch+verify+check+unpack (${mb.toFixed(1)} MiB archive, ${(unpacked / 1024 / 1024).toFixed(1)} MiB unpacked)`,
      perSecond(mb, quantile(full, 0.5)),
      "MiB/s",
      {
        what: "plain object-store get of the same bytes",
        value: perSecond(mb, quantile(plain, 0.5)),
      },
    ),
  );
}

await main();
