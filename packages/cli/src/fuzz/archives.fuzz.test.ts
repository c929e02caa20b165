/**
 * Fuzzing archives where both readers of them meet (this package depends on delivery and host):
 * random tar entries of every type flag, with hostile and random names, sizes, modes and link
 * targets. Registration's check and unpack (delivery) and a node's check and unpack (host) each
 * either take the archive or refuse it with ARCHIVE_REFUSED — never another error, never a file
 * outside the folder they unpack into — and they agree on which archives to refuse.
 *
 * FUZZ_SEED=<n> replays a run.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { rawTar, type RawEntry } from "@mesh/bus/testing";
import { checkArchiveBytes, unpackArchive } from "@mesh/delivery";
import { checkArchive, unpackBeside } from "@mesh/host";
import { ErrorCode, isMeshError } from "@mesh/protocol";

const SEED = Number(process.env["FUZZ_SEED"] ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 250);
const LIMITS = { maxBytes: 64 * 1024, maxEntries: 8 };
const ESCAPE = "mesh-archive-fuzz-escape";

const names = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      "a.js",
      "b.txt",
      "dir",
      "dir/",
      "dir/a.js",
      "dir/sub/c.json",
      "./a.js",
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "a//b",
      ".",
      "..",
      "",
      `../${ESCAPE}`,
      `../../${ESCAPE}`,
      `dir/../../${ESCAPE}`,
      `/tmp/${ESCAPE}`,
      "C:\\x",
      "a\\..\\..\\b",
      "link",
      "link/inside",
      "é/ü",
      "x".repeat(99),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

const entry: fc.Arbitrary<RawEntry> = fc
  .record(
    {
      name: names,
      type: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom("0", "0", "0", "0", "5", "5", "2") },
        { weight: 1, arbitrary: fc.constantFrom("1", "3", "4", "6", "7") },
      ),
      data: fc.string({ maxLength: 40 }),
      size: fc.oneof(
        { weight: 20, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.nat(200 * 1024) },
      ),
      linkname: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom("a.js", "../a.js", "sub/c.json", "b.txt") },
        { weight: 1, arbitrary: names },
        { weight: 1, arbitrary: fc.constantFrom("/etc", "../..", "dir") },
      ),
      mode: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom(0o644, 0o755) },
        { weight: 1, arbitrary: fc.constantFrom(0o4755, 0o2755, 0o777, 0o1777) },
      ),
    },
    { requiredKeys: ["name", "type", "mode"] },
  )
  // Mostly well-formed: only files carry data (a link or folder with a body is refused, rarely).
  // Mostly well-formed: only files carry data, only links a target (rarely otherwise).
  .chain((e) => {
    const link = e.type === "1" || e.type === "2";
    const tidy = {
      ...e,
      ...(e.type === "0" ? {} : { data: "", size: undefined }),
      ...(link ? {} : { linkname: undefined }),
    };
    return fc.oneof(
      { weight: 9, arbitrary: fc.constant(tidy) },
      { weight: 1, arbitrary: fc.constant(e) },
    );
  }) as fc.Arbitrary<RawEntry>;

/** Every path under `dir`, relative. */
async function everything(dir: string): Promise<string[]> {
  return ((await readdir(dir, { recursive: true }).catch(() => [])) as string[]).sort();
}

/** `undefined` when `work` resolved; the refusal's code when it was refused; throws otherwise. */
async function outcome(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
    return undefined;
  } catch (error) {
    assert.ok(isMeshError(error), `not a MeshError: ${String(error)}`);
    assert.equal(error.code, ErrorCode.ARCHIVE_REFUSED, error.message);
    return error.code;
  }
}

/** A refusal's kind, for the tally: its words with names and numbers taken out. */
function kindOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split("\n");
  const first = lines.length > 1 ? (lines[1] ?? "") : message;
  return first
    .replace(/"[^"]*"/g, "…")
    .replace(/\d+/g, "n")
    .replace(/^.*is refused: /, "")
    .slice(0, 70);
}

async function reason(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
    return undefined;
  } catch (error) {
    return kindOf(error);
  }
}

describe("fuzzing archives at registration and on a node", () => {
  let base: string;
  before(async () => {
    base = await mkdtemp(join(tmpdir(), "mesh-archive-fuzz-"));
  });
  after(() => rm(base, { recursive: true, force: true }));

  it(`${RUNS} random archives: taken or ARCHIVE_REFUSED, nothing outside, the two readers agree`, async () => {
    let cases = 0;
    let refused = 0;
    const reasons = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 5 }), async (entries) => {
        cases += 1;
        const bytes = rawTar(entries);
        const digest = createHash("sha256").update(bytes).digest("hex");
        const here = join(base, `case-${cases}`);
        const work = join(here, "work");
        await mkdir(work, { recursive: true });

        // Registration and the builder.
        const checked = checkArchiveBytes(bytes, { what: "the fuzzed archive", limits: LIMITS });
        const atRegistration = await outcome(checked);
        const why = await reason(checked);
        if (why !== undefined) reasons.set(why, (reasons.get(why) ?? 0) + 1);
        if (atRegistration === undefined) {
          await outcome(unpackArchive(bytes, join(work, "src"), { limits: LIMITS }));
        }

        // A node.
        const file = join(here, "archive.tgz");
        await writeFile(file, bytes);
        const root = join(work, "node");
        const context = { module: "m", digest };
        const onNode = await outcome(checkArchive(file, LIMITS, context));
        if (onNode === undefined) {
          await outcome(
            unpackBeside({
              file,
              path: join(root, "bundles", "m", "b"),
              digest,
              module: "m",
              limits: LIMITS,
            }),
          );
        }

        assert.equal(atRegistration, onNode, "registration and the node disagree");
        const outside = (await everything(here)).filter(
          (p) => p !== "work" && p !== "archive.tgz" && !p.startsWith("work/"),
        );
        assert.deepEqual(outside, [], "written outside the folder");
        assert.deepEqual(
          (await everything(base)).filter((p) => p.includes(ESCAPE)),
          [],
          "an escape",
        );
        await assert.rejects(readdir(`/tmp/${ESCAPE}`));
        if (atRegistration !== undefined) refused += 1;
        await rm(here, { recursive: true, force: true });
      }),
      { numRuns: RUNS, seed: SEED },
    );
    const top = [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 4);
    console.log(
      `archive fuzz: ${cases} cases (seed ${SEED}), ${refused} refused; most: ${JSON.stringify(top)}`,
    );
  });
});
