/**
 * `mesh completion bash|zsh|fish`: a completion script for the shell, made from the program's
 * own verbs and options (so it never drifts), that completes module and node names by asking the
 * mesh at the moment of completion (`mesh completion --names modules|nodes`, quiet and bounded:
 * a mesh that is not up completes nothing, and says nothing).
 */
import { Option, type Command } from "commander";
import { KvBucket } from "@mesh/bus";
import { Bucket, ErrorCode, MeshError } from "@mesh/protocol";
import { connectToMesh, type FindMeshOptions } from "../../find-mesh.js";
import { ExitCode } from "../../output.js";

const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

/** One verb as completion sees it. */
export interface VerbShape {
  readonly name: string;
  readonly options: readonly string[];
  readonly subcommands: readonly string[];
  /** Whether its first argument is a module name. */
  readonly moduleArgument: boolean;
}

/** Options whose value is a module, a node or a path. */
const MODULE_OPTIONS = ["--module", "--allow"];
const NODE_OPTIONS = ["--node"];
const PATH_OPTIONS = ["--root", "--credential", "--dir"];

export function verbsOf(program: Command): VerbShape[] {
  return program.commands
    .filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
    .map((c) => ({
      name: c.name(),
      options: [
        ...new Set([
          ...c.options
            .filter((o) => !o.hidden)
            .map((o) => o.long)
            .filter((l): l is string => l !== undefined),
          ...c.commands.flatMap((s) => s.options.map((o) => o.long ?? "")).filter((l) => l !== ""),
        ]),
      ].sort(),
      subcommands: c.commands.map((s) => s.name()).sort(),
      moduleArgument: /module/.test(c.registeredArguments[0]?.name() ?? ""),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function completionScript(shell: Shell, verbs: readonly VerbShape[]): string {
  switch (shell) {
    case "bash":
      return bashScript(verbs);
    case "zsh":
      // zsh runs the bash script through its bash-compatible completion.
      return `autoload -U +X bashcompinit && bashcompinit\n${bashScript(verbs)}`;
    case "fish":
      return fishScript(verbs);
  }
}

function bashScript(verbs: readonly VerbShape[]): string {
  const cases = verbs
    .map(
      (v) =>
        `    ${v.name}) opts="${v.options.join(" ")}"; subs="${v.subcommands.join(" ")}"; modarg=${v.moduleArgument ? 1 : 0} ;;`,
    )
    .join("\n");
  return `# mesh completion for bash: eval "$(mesh completion bash)" (or save it in bash_completion.d)
_mesh_names() {
  local root="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ "\${COMP_WORDS[i]}" == --root ]] && root="\${COMP_WORDS[i+1]}"
  done
  mesh completion --names "$1" \${root:+--root "$root"} 2>/dev/null
}
_mesh() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" verb="\${COMP_WORDS[1]}"
  local opts="" subs="" modarg=0
  COMPREPLY=()
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=( $(compgen -W "${verbs.map((v) => v.name).join(" ")} --help --version" -- "$cur") )
    return
  fi
  case "$prev" in
    ${MODULE_OPTIONS.join("|")}) COMPREPLY=( $(compgen -W "$(_mesh_names modules)" -- "$cur") ); return ;;
    ${NODE_OPTIONS.join("|")}) COMPREPLY=( $(compgen -W "$(_mesh_names nodes)" -- "$cur") ); return ;;
    ${PATH_OPTIONS.join("|")}) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
  esac
  case "$verb" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$opts --help" -- "$cur") )
  elif [[ -n "$subs" && $COMP_CWORD -eq 2 ]]; then
    COMPREPLY=( $(compgen -W "$subs" -- "$cur") )
  elif [[ $modarg -eq 1 || -n "$subs" ]]; then
    COMPREPLY=( $(compgen -W "$(_mesh_names modules)" -- "$cur") )
  fi
}
complete -o default -F _mesh mesh
`;
}

function fishScript(verbs: readonly VerbShape[]): string {
  const lines = [
    "# mesh completion for fish: mesh completion fish > ~/.config/fish/completions/mesh.fish",
    "complete -c mesh -f",
    `complete -c mesh -n __fish_use_subcommand -a "${verbs.map((v) => v.name).join(" ")}"`,
  ];
  for (const v of verbs) {
    const when = `"__fish_seen_subcommand_from ${v.name}"`;
    if (v.subcommands.length > 0)
      lines.push(`complete -c mesh -n ${when} -a "${v.subcommands.join(" ")}"`);
    if (v.moduleArgument || v.subcommands.length > 0)
      lines.push(`complete -c mesh -n ${when} -a "(mesh completion --names modules 2>/dev/null)"`);
    for (const option of v.options) {
      const long = option.slice(2);
      const value = MODULE_OPTIONS.includes(option)
        ? ` -r -a "(mesh completion --names modules 2>/dev/null)"`
        : NODE_OPTIONS.includes(option)
          ? ` -r -a "(mesh completion --names nodes 2>/dev/null)"`
          : PATH_OPTIONS.includes(option)
            ? " -r -F"
            : "";
      lines.push(`complete -c mesh -n ${when} -l ${long}${value}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** Module or node names, one a line; nothing (and exit 0) when the mesh cannot be reached. */
async function printNames(kind: string, options: FindMeshOptions): Promise<ExitCode> {
  if (kind !== "modules" && kind !== "nodes") {
    throw new MeshError(ErrorCode.USAGE, `--names ${JSON.stringify(kind)}: say modules or nodes`);
  }
  const signal = AbortSignal.timeout(2_000);
  try {
    await using bus = await connectToMesh({ ...options, signal });
    const bucket = await KvBucket.open(bus, kind === "modules" ? Bucket.modules : Bucket.presence);
    const names = await bucket.keys(">", { signal });
    process.stdout.write(
      names
        .sort()
        .map((n) => `${n}\n`)
        .join(""),
    );
  } catch {
    // Completion stays quiet: a mesh that is not up has no names to offer.
  }
  return ExitCode.ok;
}

export function registerCompletionVerb(program: Command): void {
  program
    .command("completion")
    .description('Print a shell completion script: eval "$(mesh completion bash)".')
    .argument("[shell]", `one of ${SHELLS.join(", ")}`)
    .addOption(
      new Option("--names <kind>", "print module or node names (used by the scripts)").hideHelp(),
    )
    .option("--root <dir>", "where `mesh up` keeps the operator's credential (default ./.mesh)")
    .option("--credential <file>", "a credential file to speak with (or set MESH_CREDENTIAL)")
    .action(async (shell: string | undefined, options: FindMeshOptions & { names?: string }) => {
      if (options.names !== undefined) {
        process.exitCode = await printNames(options.names, options);
        return;
      }
      if (!SHELLS.includes(shell as Shell)) {
        throw new MeshError(
          ErrorCode.USAGE,
          `mesh completion ${JSON.stringify(shell ?? "")}: name a shell, one of ${SHELLS.join(", ")}`,
        );
      }
      process.stdout.write(completionScript(shell as Shell, verbsOf(program)));
    });
}
