/**
 * The Go build module's work (`mesh-build-go`, decision 0162). A go bundle is one static binary,
 * `bin/<bundle>`, built from the package of its entrypoint (`main.go` builds the module's root
 * package) with `CGO_ENABLED=0 go build -trimpath -ldflags=-buildid=`: no build path, no build id,
 * no C, so the same source gives the same bytes. The build reaches no network: it runs in GOPATH
 * mode (`GO111MODULE=off`), with the module's source placed at its `go.mod` module path, the Go
 * SDK (`mesh.local/sdk`) from the mesh, and the NATS Go client from Debian's Go source packages
 * (`/usr/share/gocode`, or `MESH_GOPATH`); a module's own dependencies are vendored in its
 * `vendor/` folder.
 */
import { cp, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sdkRoot } from "./sdk-root.js";
import type {
  BuiltFiles,
  LanguageBuildInput,
  LanguageBuild,
  LanguageBuilder,
} from "./language-builder.js";
import { notInstalled, runTool } from "./language-builder.js";

/** Where the NATS Go client's sources are found (Debian's golang-github-nats-io-go-nats-dev). */
const THIRD_PARTY_GOPATH = process.env.MESH_GOPATH ?? "/usr/share/gocode";
/** The Go SDK's import path. */
export const GO_SDK_PATH = "mesh.local/sdk";

export const goBuilder: LanguageBuilder = {
  language: "go",
  toolchain: `go (1.19 or newer) and the NATS Go client's sources under ${THIRD_PARTY_GOPATH} (Debian: golang-github-nats-io-go-nats-dev) on the build machine; nothing on the nodes`,
  build: buildGo,
};

async function buildGo(input: LanguageBuildInput): Promise<LanguageBuild> {
  const { root, outRoot, say } = input;
  const fail = (error: string): LanguageBuild => {
    say(`error: ${error}`);
    return { ok: false, error };
  };
  const goMod = await readFile(join(root, "go.mod"), "utf8").catch(() => undefined);
  if (goMod === undefined) return fail("a go module has a go.mod at its root (go mod init <name>)");
  const modulePath = /^module\s+(\S+)/m.exec(goMod)?.[1];
  if (modulePath === undefined || modulePath.split("/").some((p) => p === "" || p === ".."))
    return fail("go.mod names no module path (write: module <name>)");
  const work = await mkdtemp(join(tmpdir(), "mesh-go-path-"));
  try {
    // GOPATH mode: the source at its import path (copied, not linked: go takes a link's real
    // path, outside GOPATH, and names the package after that temporary folder in the binary),
    // the SDK beside it.
    const at = join(work, "src", modulePath);
    await mkdir(dirname(at), { recursive: true });
    await cp(root, at, { recursive: true });
    await mkdir(join(work, "src", dirname(GO_SDK_PATH)), { recursive: true });
    await cp(join(sdkRoot(), "go"), join(work, "src", GO_SDK_PATH), { recursive: true });
    const built: BuiltFiles[] = [];
    for (const bundle of input.bundles) {
      const [entry] = bundle.entrypoints;
      if (entry === undefined || !entry.endsWith(".go"))
        return fail(
          `the go bundle ${bundle.name} needs an entrypoint, a .go file of its main package (e.g. main.go)`,
        );
      const pkg = dirname(entry) === "." ? "." : `./${dirname(entry)}`;
      const output = join(outRoot, bundle.name, "bin", bundle.name);
      try {
        const { stderr } = await runTool(
          "go",
          ["build", "-trimpath", "-ldflags=-buildid=", "-o", output, pkg],
          {
            cwd: at,
            timeout: 15 * 60_000,
            env: {
              PATH: process.env.PATH ?? "/usr/bin:/bin",
              HOME: process.env.HOME ?? tmpdir(),
              GOPATH: `${work}:${THIRD_PARTY_GOPATH}`,
              GO111MODULE: "off",
              CGO_ENABLED: "0",
              GOFLAGS: "",
              GOPROXY: "off",
              // Kept between builds (it never changes what is built, only how long it takes).
              GOCACHE: join(tmpdir(), "mesh-build-go-cache"),
            },
          },
        );
        for (const line of stderr.split("\n")) if (line !== "") say(line);
      } catch (error) {
        const missing = notInstalled(error, "go", "golang-go");
        if (missing !== undefined) return fail(missing);
        const failure = error as { stderr?: string };
        for (const line of (failure.stderr ?? "").split("\n")) if (line !== "") say(line);
        const first = (failure.stderr ?? "")
          .split("\n")
          .find((l) => l !== "" && !l.startsWith("#"));
        return fail(`go build of bundle ${bundle.name} failed: ${first ?? String(error)}`);
      }
      const bytes = await readFile(output);
      say(`go: bundle ${bundle.name}: bin/${bundle.name}, ${bytes.byteLength} bytes, static`);
      built.push({
        bundle: bundle.name,
        files: [{ path: `bin/${bundle.name}`, bytes, executable: true }],
        run: [`bin/${bundle.name}`],
      });
    }
    return { ok: true, bundles: built };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
