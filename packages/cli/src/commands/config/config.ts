/**
 * `mesh config set|get|unset`: an operator's values for a module's declared config keys, mesh-wide
 * (`mesh-config.<module>.<key>`) or for one node (`….<node>`). The host's provisioner client reads
 * them and tells the module when one moves; nothing restarts unless the process asked to
 * (`restart-on: config`).
 */
import type { Command } from "commander";
import { KvBucket, type MeshBus } from "@mesh/bus";
import {
  Bucket,
  ErrorCode,
  MeshError,
  checkName,
  configKey,
  parseConfigKey,
  type ConfigDeclaration,
  type ConfigValue,
} from "@mesh/protocol";
import { checkConfigValue, describeConfigViolations } from "@mesh/core";
import { knownManifests, requireModule, unknownName } from "../../known.js";
import { readAll } from "../../read-bucket.js";
import {
  ExitCode,
  act,
  answerDone,
  connect,
  meshVerb,
  out,
  printJson,
  type Done,
  type MeshOptions,
} from "../../verb.js";

export interface ConfigOptions extends MeshOptions {
  readonly node?: string;
  readonly force?: boolean;
  readonly rollout?: boolean;
}

export function registerConfigVerbs(program: Command): void {
  const config = program
    .command("config")
    .description("A module's config values, mesh-wide or for one node.");
  act(
    meshVerb(
      config,
      "set",
      "Set a config value. The value is JSON (42, true, '\"Hi\"', '{\"a\":1}'); text that is not valid JSON is kept as a string, so `mesh config set hello greeting Hi` works.",
    )
      .argument("<module>")
      .argument("<key>", "a key the module's manifest declares")
      .argument("<value>", "JSON, or plain text taken as a string")
      .option("--node <name>", "for this node only (default: mesh-wide)")
      .option(
        "--force",
        "set a key the module's manifest does not declare, or a value that breaks its declared rules",
      )
      .option(
        "--rollout",
        "move the value through the module's waves, as a new build does (`mesh rollout status`); halted and taken back when a node fails on it",
      ),
    configSet,
  );
  act(
    meshVerb(
      config,
      "get",
      "Show a module's config: declared keys with their defaults (once its manifest is known), the mesh-wide and per-node values.",
    )
      .argument("<module>")
      .argument("[key]", "only this key")
      .option("--node <name>", "only this node's own values"),
    configGet,
  );
  act(
    meshVerb(
      config,
      "unset",
      "Remove a config value: the mesh-wide value or default applies again.",
    )
      .argument("<module>")
      .argument("<key>")
      .option("--node <name>", "the node's own value (default: the mesh-wide one)"),
    configUnset,
  );
}

/**
 * The value as the operator typed it: JSON when it parses (`42`, `true`, `"x"`, `{"a":1}`), else
 * the text itself as a string, so `mesh config set hello greeting Hi` needs no shell quoting.
 */
export function parseConfigArgument(text: string): { value: unknown; asString: boolean } {
  try {
    return { value: JSON.parse(text) as unknown, asString: false };
  } catch {
    return { value: text, asString: true };
  }
}

/**
 * The module's declared config keys, from {@link knownManifests}. Undefined when no manifest is
 * known (not registered, or not built yet): then keys cannot be checked.
 */
export async function declaredConfig(
  bus: MeshBus,
  module: string,
): Promise<Record<string, ConfigDeclaration> | undefined> {
  const manifests = await knownManifests(bus, module);
  if (manifests.length === 0) return undefined;
  const declared: Record<string, ConfigDeclaration> = {};
  for (const m of manifests) for (const [key, d] of Object.entries(m.config)) declared[key] ??= d;
  return declared;
}

export function configSet(
  module: string,
  key: string,
  text: string,
  options: ConfigOptions,
): Promise<ExitCode> {
  return doneForNode(options, (bus, forNode) =>
    setConfig(bus, {
      module,
      key,
      value: text,
      ...forNode,
      force: options.force === true,
      rollout: options.rollout === true,
    }),
  );
}

/**
 * A config verb that changes a value: `--node` checked first, then `work` done on the bus for
 * that node (or mesh-wide), and what it did answered.
 */
async function doneForNode(
  options: ConfigOptions,
  work: (bus: MeshBus, forNode: { readonly node?: string }) => Promise<Done>,
): Promise<ExitCode> {
  const node = nodeOf(options);
  await using bus = await connect(options);
  return answerDone(options, await work(bus, node === undefined ? {} : { node }));
}

/**
 * `mesh config set` on a bus: the value read as JSON (else a string), checked against the key's
 * declaration unless forced. The view's page does the same.
 */
export async function setConfig(
  bus: MeshBus,
  input: {
    module: string;
    key: string;
    value: string;
    node?: string;
    force?: boolean;
    rollout?: boolean;
  },
): Promise<Done> {
  const { module, key, force } = input;
  if (input.rollout === true && input.node !== undefined) {
    throw new MeshError(
      ErrorCode.USAGE,
      `--rollout moves a mesh-wide value through the waves, node by node; --node ${input.node} sets one node's value at once: pass one of them`,
      { module, key },
    );
  }
  const k = configKey(module, key, input.node);
  const { value, asString } = parseConfigArgument(input.value);
  await requireModule(bus, module, { force, forWhat: "set the value" });
  const declared = await declaredConfig(bus, module);
  if (declared !== undefined && !Object.hasOwn(declared, key) && force !== true) {
    throw unknownName({
      what: `config key of ${module}`,
      name: key,
      known: Object.keys(declared).sort(),
      knownAs: `declared by ${module}'s manifest`,
      fix: `set a declared key, declare ${key} in ${module}'s manifest, or pass --force`,
      module,
      key: k,
    });
  }
  const declaration = declared?.[key];
  if (declaration !== undefined && force !== true) {
    const violations = checkConfigValue(declaration, value);
    if (violations.length > 0) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${describeConfigViolations(module, key, violations)}${asString ? " (the value is not JSON, so it was read as a string)" : ""}`,
        { module, key: k },
      );
    }
  }
  const record: ConfigValue = {
    value: value as ConfigValue["value"],
    by: bus.credential.user,
    at: new Date().toISOString(),
  };
  if (input.rollout === true) return requestRollout(bus, { module, key, declared, record });
  await (await KvBucket.open(bus, Bucket.config)).put(k, record);
  return {
    message: `set ${k} = ${JSON.stringify(value)}${asString ? " (not JSON, so kept as a string)" : ""}${
      declared === undefined ? ` (${module}'s manifest is not known yet; the key is unchecked)` : ""
    }`,
    result: { key: k, ...record, asString },
  };
}

/**
 * `--rollout`: the request the assigner moves through the module's waves (decision 0131). Only a
 * declared key: a host reports the values of declared keys, so no node could prove another.
 */
async function requestRollout(
  bus: MeshBus,
  input: {
    module: string;
    key: string;
    declared: Record<string, ConfigDeclaration> | undefined;
    record: ConfigValue;
  },
): Promise<Done> {
  const { module, key, declared, record } = input;
  const k = configKey(module, key);
  if (declared === undefined || !Object.hasOwn(declared, key)) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${k} cannot roll out in waves: ${declared === undefined ? `${module}'s manifest is not known yet` : `${module}'s manifest does not declare ${key}`}, so no host reports which value its module sees and no wave could be proven; declare the key (and build), or set it without --rollout`,
      { module, key: k },
    );
  }
  await (await KvBucket.open(bus, Bucket.configRollouts)).put(k, record);
  return {
    message: `rolling out ${k} = ${JSON.stringify(record.value)} in ${module}'s waves: the canary first, each wave once the one before ran it healthy; it becomes the mesh-wide value once every wave held (\`mesh rollout status ${module}\`)`,
    result: { key: k, ...record, rollout: true },
  };
}

export function configUnset(
  module: string,
  key: string,
  options: ConfigOptions,
): Promise<ExitCode> {
  return doneForNode(options, (bus, forNode) => unsetConfig(bus, { module, key, ...forNode }));
}

/** `mesh config unset` on a bus: the view's page does the same. */
export async function unsetConfig(
  bus: MeshBus,
  input: { module: string; key: string; node?: string },
): Promise<Done> {
  const k = configKey(input.module, input.key, input.node);
  const bucket = await KvBucket.open(bus, Bucket.config);
  const had = (await bucket.get(k)) !== undefined;
  if (had) await bucket.delete(k);
  return {
    message: had
      ? `unset ${k}; ${input.node === undefined ? "the declared default" : "the mesh-wide value or the default"} applies again`
      : `${k} had no value; nothing to unset`,
    result: { key: k, removed: had },
  };
}

/**
 * Every value set for `module`'s config (`<module>.<key>[.<node>]`), as the cluster acknowledged
 * it: read through the config bucket's leader (decision 0210), so a copy still catching up after
 * a partition cannot answer with what stood before the newest writes.
 */
export async function configValues(
  bus: MeshBus,
  module: string,
): Promise<Map<string, ConfigValue>> {
  return readAll(await KvBucket.open(bus, Bucket.config, { fromLeader: true }), `${module}.>`);
}

interface ConfigRow {
  readonly key: string;
  readonly declared: boolean;
  readonly description?: string;
  readonly default?: unknown;
  /** The mesh-wide value, when one is set. */
  readonly value?: ConfigValue;
  /** Per node, the node's own value. */
  readonly nodes: Record<string, ConfigValue>;
}

export async function configGet(
  module: string,
  key: string | undefined,
  options: ConfigOptions,
): Promise<ExitCode> {
  checkName("module", module);
  if (key !== undefined) checkName("config key", key);
  const node = nodeOf(options);
  await using bus = await connect(options);
  const values = await configValues(bus, module);
  const declared = await declaredConfig(bus, module);
  const rows = new Map<string, ConfigRow>();
  const row = (name: string): ConfigRow => {
    let r = rows.get(name);
    if (r === undefined) {
      const d = declared?.[name];
      r = {
        key: name,
        declared: d !== undefined,
        ...(d?.description === undefined ? {} : { description: d.description }),
        ...(d === undefined || !("default" in d) ? {} : { default: d.default }),
        nodes: {},
      };
      rows.set(name, r);
    }
    return r;
  };
  for (const name of Object.keys(declared ?? {})) row(name);
  for (const [k, v] of values) {
    const parsed = parseConfigKey(k);
    if (parsed.module !== module) continue;
    const r = row(parsed.key);
    if (parsed.node === undefined) rows.set(parsed.key, { ...r, value: v });
    else r.nodes[parsed.node] = v;
  }
  const shown = [...rows.values()]
    .filter((r) => key === undefined || r.key === key)
    .map((r) =>
      node === undefined
        ? r
        : { ...r, nodes: r.nodes[node] === undefined ? {} : { [node]: r.nodes[node] } },
    )
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  if (options.json === true) {
    printJson({ ok: true, module, manifestKnown: declared !== undefined, keys: shown });
    return ExitCode.ok;
  }
  if (declared === undefined)
    out(`${module}'s manifest is not known yet (not built or not wanted); showing set values only`);
  if (shown.length === 0)
    out(
      key === undefined
        ? `${module} has no config keys and no values`
        : `${module} has no config key ${key}`,
    );
  for (const r of shown) {
    const effective = r.value !== undefined ? "mesh-wide" : "default" in r ? "default" : "none";
    out(
      `${r.key}${r.declared ? "" : " (not declared)"}${r.description === undefined ? "" : ` — ${r.description}`}`,
    );
    const rules = rulesOf(declared?.[r.key]);
    if (rules !== "") out(`    rules      ${rules}`);
    if ("default" in r) out(`    default    ${JSON.stringify(r.default)}`);
    if (r.value !== undefined)
      out(`    mesh-wide  ${JSON.stringify(r.value.value)}  (${r.value.by}, ${r.value.at})`);
    for (const [n, v] of Object.entries(r.nodes).sort())
      out(`    on ${n}  ${JSON.stringify(v.value)}  (${v.by}, ${v.at})`);
    if (effective === "none" && Object.keys(r.nodes).length === 0) out("    no value");
  }
  return ExitCode.ok;
}

/** A declaration's rules as written (`type: "integer", maximum: 10`); empty when it has none. */
function rulesOf(declaration: ConfigDeclaration | undefined): string {
  if (declaration === undefined) return "";
  return Object.entries(declaration)
    .filter(([k]) => k !== "description" && k !== "default")
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(", ");
}

const nodeOf = (options: { node?: string }): string | undefined =>
  options.node === undefined ? undefined : checkName("node", options.node);
