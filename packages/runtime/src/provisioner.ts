/**
 * A module's values, asked of the node's provisioner client (docs/design.md "The runtime"):
 * `config` and `bound` are asked *as the module whose worker asked*, a name the
 * runtime holds for that worker and never one the code sent; `secret` is refused here and never
 * asked. A watch hands the current value, then each change, then a refusal when the value stops
 * being answered; one subscription to the client's change notices serves every watch.
 */
import { flush, isBusTrouble, isTransient, request, type MeshBus } from "@mesh/bus";
import {
  ErrorCode,
  MeshError,
  ProvisionAnswer,
  ProvisionChanged,
  ReplyCode,
  isMeshError,
  provisionChangedSubject,
  provisionSubject,
} from "@mesh/protocol";
import type { ProvisionItem } from "@mesh/sdk/internal";
import { retry } from "@mesh/kit";

/** Between asks of a watch the client did not answer: 0.5 s doubling to 5 s. */
const ASK_AGAIN_BACKOFF = { initialMs: 500, maxMs: 5_000 } as const;
/** How long an ask made again may wait for its answer. */
const ASK_AGAIN_TIMEOUT_MS = 2_000;

/** The kinds a module may name; anything else is INVALID_INPUT. */
const KINDS = ["config", "bound", "secret"] as const;
type Kind = (typeof KINDS)[number];

export interface ProvisionerOptions {
  readonly bus: MeshBus;
  readonly node: string;
  /** How long one ask of the client may take. */
  readonly askTimeoutMs?: number;
  readonly log?: (text: string) => void;
}

/** One watch a module holds. */
interface Watch {
  readonly module: string;
  readonly kind: "config" | "bound";
  readonly key: string;
  readonly deliver: (item: ProvisionItem) => void;
  /** The last value handed, as JSON, or the last refusal; asked again only one at a time. */
  last: { value: string } | { refused: string };
  stopped: boolean;
  /** Asks of this watch run one after another, so changes are handed in order. */
  chain: Promise<void>;
}

export class Provisioner implements AsyncDisposable {
  readonly #bus: MeshBus;
  readonly #node: string;
  readonly #askTimeoutMs: number;
  readonly #log: (text: string) => void;
  readonly #watches = new Set<Watch>();
  #listening: AbortController | undefined;
  /** Resolves once the change subscription is registered with the server. */
  #listeningReady: Promise<void> | undefined;
  /** Aborted by close(): an ask made again waits no more. */
  readonly #closing = new AbortController();

  constructor(options: ProvisionerOptions) {
    this.#bus = options.bus;
    this.#node = options.node;
    this.#askTimeoutMs = options.askTimeoutMs ?? 5_000;
    this.#log = options.log ?? ((text) => process.stderr.write(`${text}\n`));
  }

  /** The module's value; REFUSED or NOT_FOUND (with the client's reason) when not answered. */
  async get(
    module: string,
    asked: { kind: unknown; key: unknown },
    options: { signal?: AbortSignal } = {},
  ): Promise<unknown> {
    const { kind, key } = checkAsked("get", asked);
    return this.#ask(module, kind, key, options.signal);
  }

  /**
   * Starts a watch: asks now (throwing as `get` does when not answered), hands the value, and
   * hands each change after. Returns the function that stops it; stopping twice is harmless.
   */
  async watch(
    module: string,
    asked: { kind: unknown; key: unknown },
    deliver: (item: ProvisionItem) => void,
  ): Promise<() => void> {
    const { kind, key } = checkAsked("watch", asked);
    // Listen before the first ask, so a change between the ask and the subscription is not lost.
    await this.#listen();
    const value = await this.#ask(module, kind, key);
    const watch: Watch = {
      module,
      kind: kind as "config" | "bound",
      key,
      deliver,
      last: { value: JSON.stringify(value) },
      stopped: false,
      chain: Promise.resolve(),
    };
    this.#watches.add(watch);
    deliver({ value });
    return () => {
      watch.stopped = true;
      this.#watches.delete(watch);
    };
  }

  /** How many watches are live (for status and tests). */
  get watchCount(): number {
    return this.#watches.size;
  }

  /** Stops every watch of `module` (it was unloaded). */
  stopModule(module: string): void {
    for (const watch of this.#watches) {
      if (watch.module === module) {
        watch.stopped = true;
        this.#watches.delete(watch);
      }
    }
  }

  async #ask(
    module: string,
    kind: Kind,
    key: string,
    signal?: AbortSignal,
    timeoutMs = this.#askTimeoutMs,
  ): Promise<unknown> {
    if (kind === "secret") {
      throw new MeshError(
        ErrorCode.REFUSED,
        `the secret ${JSON.stringify(key)} is not handed to module code while it runs in the tool runtime: ` +
          `the provisioner serves no secret on the runtime's word, since the bus proves only the runtime here; ` +
          `declare it under own-secrets in ${module}'s manifest and read it from the file the host writes`,
        { module, key },
      );
    }
    const subject = provisionSubject(this.#node);
    let answer: unknown;
    try {
      answer = await request(
        this.#bus,
        subject,
        { module, kind, key },
        { timeoutMs, ...(signal === undefined ? {} : { signal }) },
      );
    } catch (error) {
      // No responders, or no answer in time, is the client not being there (its host restarting
      // or killed: the server may still route to a connection it has not yet seen close), not an
      // answer: it is no NOT_FOUND of the value, so it is never handed to module code as a refusal.
      if (!isBusTrouble(error)) throw error;
      const how = isTransient(error)
        ? `nothing answers ${subject}`
        : `nothing answered ${subject} within ${timeoutMs} ms`;
      throw new MeshError(
        ErrorCode.TIMEOUT,
        `the provisioner client of ${this.#node} is not reachable (${how}: its host is restarting or not running); ask for ${module}'s ${kind} ${JSON.stringify(key)} again shortly`,
        { module, key, subject, cause: error },
      );
    }
    const parsed = ProvisionAnswer.safeParse(answer);
    if (!parsed.success) {
      throw new MeshError(
        ErrorCode.INTERNAL,
        `the provisioner client of ${this.#node} answered ${module}'s ${kind} ${JSON.stringify(key)} with something that is not {value}; the host and runtime run different versions`,
        { module, key },
      );
    }
    return parsed.data.value;
  }

  /** Subscribes to the change notices once, when the first watch starts. */
  #listen(): Promise<void> {
    if (this.#listeningReady !== undefined) return this.#listeningReady;
    const controller = new AbortController();
    this.#listening = controller;
    const subject = provisionChangedSubject(this.#node);
    const messages = this.#bus.subscribe(subject, { signal: controller.signal });
    void (async () => {
      try {
        for await (const message of messages) {
          let changed: ProvisionChanged;
          try {
            changed = ProvisionChanged.parse(message.json());
          } catch (error) {
            this.#log(
              `[node-tools] ignored a change notice on ${subject} that is not one: ${String(error)}`,
            );
            continue;
          }
          for (const watch of this.#watches) {
            if (
              watch.module === changed.module &&
              watch.kind === changed.kind &&
              (changed.key === undefined || changed.key === watch.key)
            ) {
              this.#queueAgain(watch);
            }
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) {
          this.#log(
            `[node-tools] stopped hearing ${subject}: ${String(error)}; watches get no changes until the runtime restarts`,
          );
        }
      }
    })();
    this.#askAgainWhenBack(controller.signal);
    // A flush makes the server register the subscription before the first ask is answered.
    this.#listeningReady = flush(this.#bus);
    return this.#listeningReady;
  }

  /**
   * A notice said while this connection was away is lost (core NATS keeps nothing): the host,
   * back first from a partition, says what moved before the runtime hears again. So each watch
   * asks again when the runtime's own connection is back, and hands what moved meanwhile.
   */
  #askAgainWhenBack(signal: AbortSignal): void {
    this.#bus.onConnection(
      (now) => {
        if (now.status === "connected") for (const watch of this.#watches) this.#queueAgain(watch);
      },
      { signal },
    );
  }

  /** Asks again after the watch's earlier asks, one at a time. */
  #queueAgain(watch: Watch): void {
    watch.chain = watch.chain
      .then(() => this.#again(watch))
      .catch((error: unknown) =>
        this.#log(
          `[node-tools] ${watch.module}'s watch of its ${watch.kind} ${watch.key} failed: ${String(error)}`,
        ),
      );
  }

  /**
   * Asks again after a change notice (or the connection's return) and hands what moved: a new
   * value, or a refusal. An ask the client does not answer (no responders, or no answer in
   * time) is made again, with backoff, until it is answered: the notice that would have asked
   * again may be gone for good. A host back from a partition before the runtime says its notice
   * while the runtime is away, and the runtime's own ask when it is back can be routed to the
   * host's old connection, which a server that has not yet seen it close still holds; waiting
   * for the next notice then kept the old value for as long as nothing else changed.
   */
  async #again(watch: Watch): Promise<void> {
    if (watch.stopped) return;
    let next: { value: string; raw: unknown } | { refused: string };
    try {
      // The client answers from what it holds at once: an ask it has not answered in 2 s went
      // where nothing answers, and the next one is made sooner than the first ask's deadline.
      const timeoutMs = Math.min(this.#askTimeoutMs, ASK_AGAIN_TIMEOUT_MS);
      const ask = () => this.#ask(watch.module, watch.kind, watch.key, undefined, timeoutMs);
      const value = await retry(ask, {
        policy: ASK_AGAIN_BACKOFF,
        isRetriable: (error) => !watch.stopped && isMeshError(error, ErrorCode.TIMEOUT),
        signal: this.#closing.signal,
        onRetry: ({ attempt, error }) => {
          if (attempt === 1)
            this.#log(
              `[node-tools] ${watch.module}'s watch of its ${watch.kind} ${watch.key} could not ask again (asked again until it is answered): ${error.message}`,
            );
        },
      });
      next = { value: JSON.stringify(value), raw: value };
    } catch (error) {
      if (isMeshError(error, ReplyCode.REFUSED) || isMeshError(error, ReplyCode.NOT_FOUND)) {
        next = { refused: error.message };
      } else if (watch.stopped || this.#closing.signal.aborted) {
        return;
      } else {
        throw error;
      }
    }
    if (watch.stopped) return;
    if ("refused" in next) {
      if ("refused" in watch.last && watch.last.refused === next.refused) return;
      watch.last = { refused: next.refused };
      watch.deliver({ refused: next.refused });
      return;
    }
    if ("value" in watch.last && watch.last.value === next.value) return;
    watch.last = { value: next.value };
    watch.deliver({ value: next.raw });
  }

  /** Stops every watch and the subscription. Closing twice is harmless. */
  async close(): Promise<void> {
    this.#closing.abort();
    for (const watch of this.#watches) watch.stopped = true;
    this.#watches.clear();
    this.#listening?.abort();
    this.#listening = undefined;
    this.#listeningReady = undefined;
    await Promise.resolve();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function checkAsked(
  verb: string,
  asked: { kind: unknown; key: unknown },
): { kind: Kind; key: string } {
  const { kind, key } = asked;
  if (typeof key !== "string" || key === "" || typeof kind !== "string" || kind === "") {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `mesh/provision.${verb} names no value: send {kind, key} with kind config or bound and a key`,
    );
  }
  if (!(KINDS as readonly string[]).includes(kind)) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `mesh/provision.${verb}: ${JSON.stringify(kind)} is not a kind of value a module reads at runtime; ask for config or bound`,
      { key },
    );
  }
  return { kind: kind as Kind, key };
}
