/**
 * The type check of a build: the TypeScript compiler, in this process, over a module's source
 * copy, with the module's own `tsconfig.json` or a strict default. A type error fails the build
 * with the compiler's messages, as a syntax error does.
 *
 * Fast enough to run on every build: the compiler is loaded once, and what does not change from
 * one build to the next (the standard library's and dependencies' declaration files, most of the
 * work) is parsed once and kept; only the module's own files are read, bound and checked again.
 * Declaration files themselves are not checked (`skipLibCheck`).
 */
import { existsSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import type TS from "typescript";
import type { Manifest } from "@mesh/protocol";
import { configAgreementFile, CONFIG_CHECK_FILE } from "./config-agreement.js";

export type TypeCheck =
  | { readonly ok: true; readonly files: number; readonly config: string }
  | { readonly ok: false; readonly messages: readonly string[]; readonly config: string };

/** At most this many of the compiler's messages reach a build's log. */
export const MAX_TYPE_MESSAGES = 30;

let typescript: typeof TS | undefined;
async function compiler(): Promise<typeof TS> {
  typescript ??= (await import("typescript")).default;
  return typescript;
}

/** Options without the ones named: a checked copy is never emitted, so they do not apply. */
function without(options: TS.CompilerOptions, names: readonly string[]): TS.CompilerOptions {
  const out: TS.CompilerOptions = { ...options };
  for (const name of names) Reflect.deleteProperty(out, name);
  return out;
}

/**
 * Checks the module copied at `root`: the files its tsconfig includes, or else `entries`, plus
 * the agreement of its tools' config schema with the manifest. `nodePaths` are where packages
 * not found beside the copy are looked for (the module's own node_modules, then the mesh's).
 */
export async function typeCheck(input: {
  readonly root: string;
  readonly entries: readonly string[];
  readonly nodePaths: readonly string[];
  readonly manifest: Manifest;
}): Promise<TypeCheck> {
  const ts = await compiler();
  const root = resolve(input.root);
  const own = join(root, "tsconfig.json");
  const config = existsSync(own) ? "tsconfig.json" : "the strict default";
  const parsed = existsSync(own) ? readOwnConfig(ts, own, root) : strictDefault(ts);
  if ("errors" in parsed) return { ok: false, messages: parsed.errors, config };
  // The copy is checked, never emitted, so where output would go does not matter, and a file
  // the builder adds beside the sources must not be refused for lying outside rootDir.
  const options: TS.CompilerOptions = {
    ...without(parsed.options, ["rootDir", "outDir", "tsBuildInfoFile", "declarationDir"]),
    noEmit: true,
    skipLibCheck: true,
    incremental: false,
    composite: false,
    declaration: false,
    declarationMap: false,
    emitDeclarationOnly: false,
  };
  if (options.types === undefined && hasNodeTypes(input.nodePaths)) options.types = ["node"];
  const agreement = configAgreementFile(input.manifest);
  const files = [
    ...new Set(
      [...parsed.files, ...input.entries.map((e) => join(root, e))].map((f) => resolve(f)),
    ),
  ];
  const host = compilerHost(ts, options, root, input.nodePaths, agreement);
  // The agreement is checked where the SDK's types can be found; a module that does not use
  // the SDK has no config schema to disagree with.
  if (agreement !== undefined && sdkResolves(ts, host, options, root, input.nodePaths))
    files.push(join(root, CONFIG_CHECK_FILE));
  const program = ts.createProgram({ rootNames: files, options, host });
  // Under the default, a JavaScript package without types is `any` rather than an error (7016).
  const diagnostics = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => !(config !== "tsconfig.json" && d.code === 7016));
  if (diagnostics.length === 0) return { ok: true, files: files.length, config };
  return { ok: false, messages: describe(ts, diagnostics, root), config };
}

function readOwnConfig(
  ts: typeof TS,
  file: string,
  root: string,
): { options: TS.CompilerOptions; files: string[] } | { errors: string[] } {
  const read = ts.readConfigFile(file, (path) => ts.sys.readFile(path));
  if (read.error !== undefined) return { errors: describe(ts, [read.error], root) };
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, file);
  // "No inputs were found" is not a problem here: the entries are checked anyway.
  const errors = parsed.errors.filter((d) => d.code !== 18003);
  if (errors.length > 0) {
    const lines = describe(ts, errors, root);
    // 5083/6053: a file it extends is not there, which is what an extends above the module's
    // folder looks like: the builder has the module's folder and nothing around it.
    if (errors.some((d) => d.code === 5083 || d.code === 6053))
      lines.push(
        "the module's tsconfig.json extends a file the build does not have (the builder has the module's folder only); make it stand alone, or extend a package the module depends on",
      );
    return { errors: lines };
  }
  return { options: parsed.options, files: parsed.fileNames };
}

/** What a module without a tsconfig.json is checked with: strict, resolved as esbuild bundles. */
function strictDefault(ts: typeof TS): { options: TS.CompilerOptions; files: string[] } {
  return {
    options: {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2023.d.ts"],
      resolveJsonModule: true,
      esModuleInterop: true,
      forceConsistentCasingInFileNames: true,
      noFallthroughCasesInSwitch: true,
      allowJs: true,
      checkJs: false,
    },
    files: [],
  };
}

function sdkResolves(
  ts: typeof TS,
  host: TS.CompilerHost,
  options: TS.CompilerOptions,
  root: string,
  nodePaths: readonly string[],
): boolean {
  return [root, ...nodePaths.map((p) => dirname(p))].some(
    (dir) =>
      ts.resolveModuleName("@mesh/sdk", join(dir, "__mesh_resolve__.ts"), options, host)
        .resolvedModule !== undefined,
  );
}

function hasNodeTypes(nodePaths: readonly string[]): boolean {
  return nodePaths.some((p) => existsSync(join(p, "@types", "node")));
}

interface CachedFile {
  readonly mtimeMs: number;
  readonly file: TS.SourceFile;
}
/** Parsed declaration and library files, by settings and path: shared by every build. */
const parsedFiles = new Map<string, CachedFile>();
const MAX_CACHED_FILES = 20_000;

function compilerHost(
  ts: typeof TS,
  options: TS.CompilerOptions,
  root: string,
  nodePaths: readonly string[],
  agreement: string | undefined,
): TS.CompilerHost {
  const host = ts.createCompilerHost(options, true);
  const checkFile = join(root, CONFIG_CHECK_FILE);
  const settings = JSON.stringify([options.target, options.module, options.moduleResolution]);
  const inside = (file: string): boolean => !relative(root, file).startsWith("..");
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, language, onError, shouldCreate) => {
    if (agreement !== undefined && resolve(fileName) === checkFile)
      return ts.createSourceFile(fileName, agreement, language, true);
    // The module's own files change from build to build; everything else is kept once parsed.
    if (inside(fileName)) return getSourceFile(fileName, language, onError, shouldCreate);
    const key = `${settings}\0${JSON.stringify(language)}\0${fileName}`;
    const mtimeMs = mtimeOf(fileName);
    const cached = parsedFiles.get(key);
    if (cached !== undefined && cached.mtimeMs === mtimeMs) return cached.file;
    const file = getSourceFile(fileName, language, onError, shouldCreate);
    if (file !== undefined) {
      if (parsedFiles.size >= MAX_CACHED_FILES) parsedFiles.clear();
      parsedFiles.set(key, { mtimeMs, file });
    }
    return file;
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (f) => (agreement !== undefined && resolve(f) === checkFile) || fileExists(f);
  // Packages the copy does not have beside it are looked for where esbuild looks: the module's
  // own node_modules, then the mesh's (the SDK), as NODE_PATH does.
  const elsewhere = nodePaths.map((p) => join(dirname(p), "__mesh_resolve__.ts"));
  host.resolveModuleNameLiterals = (literals, containing, redirected, opts, source) =>
    literals.map((literal) => {
      const name = literal.text;
      const mode = ts.getModeForUsageLocation(source, literal, opts);
      const resolveFrom = (from: string) =>
        ts.resolveModuleName(name, from, opts, host, undefined, redirected, mode);
      const first = resolveFrom(containing);
      if (first.resolvedModule !== undefined || name.startsWith(".")) return first;
      for (const from of elsewhere) {
        const found = resolveFrom(from);
        if (found.resolvedModule !== undefined) return found;
      }
      return first;
    });
  host.resolveTypeReferenceDirectiveReferences = (refs, containing, redirected, opts) =>
    refs.map((ref) => {
      const name = typeof ref === "string" ? ref : ref.fileName.toLowerCase();
      const first = ts.resolveTypeReferenceDirective(name, containing, opts, host, redirected);
      if (first.resolvedTypeReferenceDirective !== undefined) return first;
      for (const from of elsewhere) {
        const found = ts.resolveTypeReferenceDirective(name, from, opts, host, redirected);
        if (found.resolvedTypeReferenceDirective !== undefined) return found;
      }
      return first;
    });
  return host;
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

/** `src/tools.ts(3,7): error TS2322: …`, paths relative to the module's root, at most a few. */
function describe(ts: typeof TS, diagnostics: readonly TS.Diagnostic[], root: string): string[] {
  const lines = diagnostics.slice(0, MAX_TYPE_MESSAGES).map((d) => {
    // The compiler's chain of reasons on one line, each after the one it explains.
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n").replace(/\n\s*/g, " ");
    const category = ts.DiagnosticCategory[d.category].toLowerCase();
    if (d.file === undefined || d.start === undefined) return `${category} TS${d.code}: ${text}`;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    const path = relative(root, d.file.fileName).split(sep).join("/");
    const where = `${path}(${line + 1},${character + 1})`;
    if (path === CONFIG_CHECK_FILE)
      return `${where}: error TS${d.code}: the config schema given to defineModule does not agree with the manifest's config: ${text}`;
    return `${where}: ${category} TS${d.code}: ${text}`;
  });
  if (diagnostics.length > MAX_TYPE_MESSAGES)
    lines.push(`… and ${diagnostics.length - MAX_TYPE_MESSAGES} more`);
  return lines;
}
