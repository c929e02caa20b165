/**
 * A daemon of delivery whose work is one reconciler (the builder's, the indexer's): it holds the
 * bus, the log and its options; its state, its run, its stop and its disposal are the
 * reconciler's, and `afterRun` lets go of what a run opened.
 */
import type { MeshBus, Reconciler, Sources } from "@mesh/bus";
import type { Daemon, Lifecycle, RunOptions } from "@mesh/kit";

export interface ReconciledOptions {
  readonly bus: MeshBus;
  readonly log?: (line: string) => void;
}

export abstract class ReconciledDaemon<S extends Sources, K, O extends ReconciledOptions>
  implements Daemon, AsyncDisposable
{
  protected readonly bus: MeshBus;
  protected readonly log: (line: string) => void;
  protected readonly options: O;
  protected abstract readonly reconciler: Reconciler<S, K>;

  protected constructor(options: O) {
    this.bus = options.bus;
    this.log = options.log ?? (() => undefined);
    this.options = options;
  }

  /** Lets go of what a run opened, once it ended (however). */
  protected abstract afterRun(): void;

  get state(): Lifecycle {
    return this.reconciler.state;
  }

  async run(options: RunOptions): Promise<void> {
    try {
      await this.reconciler.run(options);
    } finally {
      this.afterRun();
    }
  }

  stop(): Promise<void> {
    return this.reconciler.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
