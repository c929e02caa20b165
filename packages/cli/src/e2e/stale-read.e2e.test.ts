/**
 * Reads for "what is the value now" after a minority partition (issue 23, decision 0210): three
 * bus servers each on a network stack of its own, one that does not lead the config bucket cut off
 * while ten config writes are acknowledged on the other two, then healed. Read at once, and again
 * until the server cut off is a current copy, through a connection to that very server: what
 * `mesh config get` reads, what the host's config source hands first and a get of the key all
 * give the newest acknowledged write. Before decision 0210 a copy still catching up answered them
 * (its direct gets, and the consumers the meta leader placed on it) with what stood before the
 * writes. Needs root for the namespaces: without it the test fails and says so (CI is root).
 */
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { KvBucket, MeshBus, ensureLayout, readStanding, streamPlacement } from "@mesh/bus";
import { startTestCluster, waitFor, type TestCluster } from "@mesh/bus/testing";
import { Bucket, kvStreamName, type Credential } from "@mesh/protocol";
import { configValues } from "../commands/config/config.js";
import { FleetNet, netnsUnavailable } from "../testing/fleet-net.js";

const KEY = "hello.greeting";
const WRITES = 10;
/** How long the server stays cut off: its copy's raft group campaigns alone meanwhile. */
const AWAY_MS = 20_000;
const STREAM = kvStreamName(Bucket.config);

let net: FleetNet | undefined;
let cluster: TestCluster | undefined;
const buses: MeshBus[] = [];

before(async () => {
  const unavailable = await netnsUnavailable();
  if (unavailable !== undefined) throw new Error(`the stale-read test cannot run: ${unavailable}`);
  net = await FleetNet.create();
  const members = [];
  for (let i = 1; i <= 3; i++) members.push(await net.add(`s${i}`, i));
  cluster = await startTestCluster({ network: members });
});

after(async () => {
  for (const bus of buses) await bus.close();
  await cluster?.stop();
  await net?.remove();
});

async function connect(servers: readonly string[]): Promise<MeshBus> {
  assert.ok(cluster !== undefined);
  const credential: Credential = {
    ...cluster.credential(cluster.admin, { node: "c", module: "operator" }),
    servers: [...servers],
  };
  const bus = await MeshBus.connect(credential, { say: () => undefined });
  buses.push(bus);
  return bus;
}

const valueOf = (word: string) => ({ value: word, by: "ada", at: new Date().toISOString() });

/**
 * A server passes a direct get to any member of the stream's queue group, its own copy or another
 * server's over a route: several at once make sure the copy of the server connected to is asked.
 */
const GETS = 12;

const shown = async (read: () => Promise<unknown>): Promise<string> =>
  String(
    await read().catch((error: unknown) => `failed: ${(error as Error).message.slice(0, 300)}`),
  );

/** The config bucket, read through its leader (decision 0210) or from any copy as before it. */
const configBucket = (bus: MeshBus, fromLeader: boolean) =>
  KvBucket.open(bus, Bucket.config, fromLeader ? { fromLeader: true } : {});

/** GETS gets of the key, each through a bucket of its own, called `read`. */
const getsOfKey = (
  read: string,
  bus: MeshBus,
  fromLeader: boolean,
): Array<[string, Promise<string>]> =>
  Array.from({ length: GETS }, (): [string, Promise<string>] => [
    read,
    shown(async () => (await (await configBucket(bus, fromLeader)).get(KEY))?.value.value),
  ]);

/** Each read with what it answered, once all have. */
const answered = (reads: Array<[string, Promise<string>]>): Promise<Array<[string, string]>> =>
  Promise.all(reads.map(async ([read, value]): Promise<[string, string]> => [read, await value]));

/** What each read for "the value now" answers, all made at once: `[read, value]`. */
const readsNow = (bus: MeshBus): Promise<Array<[string, string]>> =>
  answered([
    ["mesh config get", shown(async () => (await configValues(bus, "hello")).get(KEY)?.value)],
    [
      "the host's config source, first read",
      shown(
        async () =>
          (await readStanding(await configBucket(bus, true), { key: "*.*" })).get(KEY)?.value,
      ),
    ],
    ...getsOfKey("a get of the key", bus, true),
  ]);

/** The same reads from any copy, as before decision 0210, made at the same time. */
const readsAnyCopy = (bus: MeshBus): Promise<Array<[string, string]>> =>
  answered([
    [
      "a watch's first read",
      shown(
        async () =>
          (await readStanding(await configBucket(bus, false), { key: "hello.>" })).get(KEY)?.value,
      ),
    ],
    ...getsOfKey("a direct get", bus, false),
  ]);

describe("a minority server cut off while config writes are acknowledged", () => {
  test("read at once after the heal, and until it is current again: every read gives the newest write", async () => {
    assert.ok(cluster !== undefined && net !== undefined);
    const admin = await connect(cluster.urls);
    assert.equal((await ensureLayout(admin)).replicas, 3);
    const config = await KvBucket.open(admin, Bucket.config);
    await config.put(KEY, valueOf("Before"));
    const placed = await waitFor(
      async () => {
        const p = await streamPlacement(admin, STREAM);
        const current = p.followers.length === 2 && p.followers.every((f) => f.current && !f.lag);
        return current && p.leader !== undefined ? p : undefined;
      },
      { what: "every copy of the config bucket current", timeout: 120_000 },
    );
    const cut = [0, 1, 2].find((i) => placed.leader?.endsWith(`-s${i + 1}`) !== true) ?? 0;
    const name = `s${cut + 1}`;
    // The writes go to the two servers left; the reads after the heal to the one cut off.
    const writer = await connect(cluster.urls.filter((_, i) => i !== cut));
    const written = await KvBucket.open(writer, Bucket.config);
    await net.partition(name);
    const cutAt = Date.now();
    let newest = "";
    for (let i = 0; i < WRITES; i++) {
      newest = `Minority${i}`;
      await written.put(KEY, valueOf(newest));
    }
    await delay(Math.max(0, AWAY_MS - (Date.now() - cutAt)));
    await net.heal(name);
    const healedAt = Date.now();
    const reader = await connect([cluster.urls[cut] ?? ""]);
    const wrong: string[] = [];
    const behind: string[] = [];
    let rounds = 0;
    let currentAt: number | undefined;
    // At once, then again until the server is a current copy and a few rounds after it.
    for (let after = 0; after < 3; rounds++) {
      const at = Date.now() - healedAt;
      // Both at once: the reads from any copy answer while the right ones wait for a leader.
      const [now, anyCopy] = await Promise.all([readsNow(reader), readsAnyCopy(reader)]);
      const when = `${(at / 1000).toFixed(1)} s after the heal`;
      for (const [read, got] of now) if (got !== newest) wrong.push(`${when}, ${read}: ${got}`);
      for (const [read, got] of anyCopy)
        if (got !== newest) behind.push(`${when}, ${read}: ${got}`);
      const p = await streamPlacement(admin, STREAM).catch(() => undefined);
      const me = p?.followers.find((f) => f.name.endsWith(`-${name}`));
      const current = p?.leader?.endsWith(`-${name}`) === true || (me?.current === true && !me.lag);
      if (current) currentAt ??= Date.now() - healedAt;
      if (current || Date.now() - healedAt > 180_000) after += 1;
    }
    process.stdout.write(
      `# ${name} cut off ${AWAY_MS / 1000} s, ${WRITES} writes acknowledged; current again ` +
        `${((currentAt ?? Number.NaN) / 1000).toFixed(1)} s after the heal; ${rounds} rounds of reads, ` +
        `${wrong.length} not the newest; from any copy ${behind.length} not the newest` +
        `${behind.length === 0 ? "" : ` (${behind.slice(0, 6).join("; ")})`}\n`,
    );
    assert.deepEqual(
      wrong,
      [],
      `reads answered with what stood before the newest write (${newest})`,
    );
    // What makes the run worth anything: the server cut off was behind when read (its routes wait
    // out TCP's retransmission backoff, seconds after 20 s away, while a new client reaches it).
    assert.ok(
      behind.length > 0,
      `no read from any copy found ${name} behind: the run showed nothing`,
    );
  });
});
