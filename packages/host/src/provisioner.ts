/**
 * The provisioner client's answers (docs/design.md "The host"): what a module composed on this node
 * may ask of kind `config` (its declared key: the default, overridden by the mesh-wide value,
 * overridden by this node's value) and `bound` (what the composition derives for it, and the bus
 * urls). `secret` is refused: secrets reach a module as files. Anything about a module not
 * composed here is refused.
 *
 * It also says when a value a module can ask moved, by comparing every answer before and after
 * each change of the composition or of mesh-config.
 */
import type { EndpointSpec } from "@mesh/bus";
import { fingerprintOf } from "@mesh/core";
import {
  BoundKey,
  ErrorCode,
  MeshError,
  ModuleProvisionAsk,
  ProvisionAsk,
  parseConfigKey,
  parseProvisionModuleSubject,
  provisionModuleWildcard,
  provisionSubject,
  type ComposedModule,
  type ProvisionAnswer,
  type ProvisionChanged,
} from "@mesh/protocol";

type Json = ProvisionAnswer["value"];

export interface ProvisionerOptions {
  readonly node: string;
  /** The bus urls, the `servers` bound value. */
  readonly servers: readonly string[];
  /** Told each value that moved, once per change. */
  readonly onChanged: (changed: ProvisionChanged) => void;
}

export class Provisioner {
  readonly #options: ProvisionerOptions;
  #modules: Readonly<Record<string, ComposedModule>> = {};
  /** mesh-config, by key (`<module>.<key>` or `<module>.<key>.<node>`). */
  readonly #config = new Map<string, Json>();

  constructor(options: ProvisionerOptions) {
    this.#options = options;
  }

  /** The modules of a new composition. */
  setModules(modules: Readonly<Record<string, ComposedModule>> | undefined): void {
    this.#changing(() => {
      this.#modules = modules ?? {};
    });
  }

  /** A mesh-config key's value, or undefined when it was deleted. Keys of other nodes are ignored. */
  setConfig(key: string, value: Json | undefined): void {
    let parsed: ReturnType<typeof parseConfigKey>;
    try {
      parsed = parseConfigKey(key);
    } catch {
      return; // not a config key of the layout; nothing asks for it
    }
    if (parsed.node !== undefined && parsed.node !== this.#options.node) return;
    this.#changing(() => {
      if (value === undefined) this.#config.delete(key);
      else this.#config.set(key, value);
    });
  }

  /** Forgets every config key but `keys` (those a fresh watch handed): the others were deleted. */
  retainConfig(keys: ReadonlySet<string>, within: (key: string) => boolean = () => true): void {
    this.#changing(() => {
      for (const key of [...this.#config.keys()])
        if (within(key) && !keys.has(key)) this.#config.delete(key);
    });
  }

  /** The module's config as its processes see it: a fingerprint input for `restart-on: config`. */
  configOf(module: string): Record<string, Json> | undefined {
    const composed = this.#modules[module];
    if (composed === undefined) return undefined;
    const out: Record<string, Json> = {};
    for (const key of Object.keys(composed.config).sort()) {
      const value = this.#configValue(module, composed, key);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }

  /** The answer to an ask; a MeshError (REFUSED, NOT_FOUND, INVALID_INPUT) otherwise. */
  answer(ask: ProvisionAsk): ProvisionAnswer {
    const { module, kind, key } = ask;
    const composed = Object.hasOwn(this.#modules, module) ? this.#modules[module] : undefined;
    if (composed === undefined) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `${module} is not composed on ${this.#options.node}, so its values are not answered here; ask the host of a node that runs it`,
        { module, node: this.#options.node },
      );
    }
    switch (kind) {
      case "secret":
        throw new MeshError(
          ErrorCode.REFUSED,
          `the secret ${JSON.stringify(key)} of ${module} is not answered through provision: secrets reach a module as files (own-secrets), never on a process's word — read it from its file`,
          { module, key },
        );
      case "config": {
        if (!Object.hasOwn(composed.config, key)) {
          throw new MeshError(
            ErrorCode.REFUSED,
            `${module} declares no config key ${JSON.stringify(key)}, so it is not answered; declare it in ${module}'s manifest (config) to use it`,
            { module, key },
          );
        }
        const value = this.#configValue(module, composed, key);
        if (value === undefined) {
          throw new MeshError(
            ErrorCode.NOT_FOUND,
            `${module}'s config key ${JSON.stringify(key)} has no default and no value is set; set one with \`mesh config set ${module} ${key} <value>\``,
            { module, key },
          );
        }
        return { value };
      }
      case "bound": {
        const value = this.#boundOf(composed)[key];
        if (value === undefined) {
          throw new MeshError(
            ErrorCode.NOT_FOUND,
            `${module} has no bound value ${JSON.stringify(key)} on ${this.#options.node}; the bound values are ${Object.keys(this.#boundOf(composed)).sort().join(", ")}`,
            { module, key },
          );
        }
        return { value };
      }
    }
  }

  #boundOf(composed: ComposedModule): Record<string, Json> {
    return {
      [BoundKey.node]: this.#options.node,
      ...composed.bound,
      [BoundKey.servers]: [...this.#options.servers],
      // The build the composition names: the runtime reports it as the module's service version.
      ...(composed.build === undefined ? {} : { [BoundKey.build]: composed.build }),
    };
  }

  #configValue(module: string, composed: ComposedModule, key: string): Json | undefined {
    return (
      this.#config.get(`${module}.${key}.${this.#options.node}`) ??
      this.#config.get(`${module}.${key}`) ??
      composed.config[key]?.default
    );
  }

  /** Every value that can be asked, by `<module>\0<kind>\0<key>`, as a fingerprint. */
  #snapshot(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [module, composed] of Object.entries(this.#modules)) {
      for (const key of Object.keys(composed.config)) {
        out.set(
          `${module}\0config\0${key}`,
          fingerprintOf(this.#configValue(module, composed, key) ?? null),
        );
      }
      for (const [key, value] of Object.entries(this.#boundOf(composed)))
        out.set(`${module}\0bound\0${key}`, fingerprintOf(value));
    }
    return out;
  }

  #changing(change: () => void): void {
    const before = this.#snapshot();
    change();
    const after = this.#snapshot();
    const moved = new Set<string>();
    for (const [id, value] of after) if (before.get(id) !== value) moved.add(id);
    for (const id of before.keys()) if (!after.has(id)) moved.add(id);
    for (const id of [...moved].sort()) {
      const [module, kind, key] = id.split("\0") as [string, "config" | "bound", string];
      this.#options.onChanged({ module, kind, key });
    }
  }
}

/**
 * The provisioner client's endpoints: the runtime's asks (`{module, kind, key}` on
 * `mesh.provision.<node>`, the module being the runtime's word for the worker that asked), and a
 * module's own process asking as itself (`{kind, key}` on `mesh.provision.<node>.module.<module>`,
 * the module being the subject's, which only that module's credential may publish to).
 */
export function provisionEndpoints(node: string, provisioner: Provisioner): EndpointSpec[] {
  const invalid = (body: unknown, shape: string): MeshError =>
    new MeshError(
      ErrorCode.INVALID_INPUT,
      `a provision ask is ${shape} with kind config, bound or secret; got ${JSON.stringify(body)}`,
    );
  return [
    {
      name: "provision",
      subject: provisionSubject(node),
      // The answer is synchronous (a lookup in what the host holds); serve() wants a promise.
      handler: (request) => {
        const ask = ProvisionAsk.safeParse(request.json());
        if (!ask.success) throw invalid(request.json(), "{module, kind, key}");
        return Promise.resolve(provisioner.answer(ask.data));
      },
    },
    {
      name: "provision-module",
      subject: provisionModuleWildcard(node),
      handler: (request) => {
        const { module } = parseProvisionModuleSubject(request.subject);
        const ask = ModuleProvisionAsk.safeParse(request.json());
        if (!ask.success) throw invalid(request.json(), "{kind, key}");
        return Promise.resolve(provisioner.answer({ module, ...ask.data }));
      },
    },
  ];
}
