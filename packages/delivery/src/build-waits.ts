/**
 * The builds that wait for a build module (decision 0160): which candidates wait for which
 * language, and the condition that names the build module they wait for. The condition is said
 * when the first build starts waiting and resolved when the build module answers again.
 */
import { sayCondition, type MeshBus } from "@mesh/bus";
import { buildAskSubject, buildModuleName, type Candidate } from "@mesh/protocol";

/** The condition's name: `waiting-<language>`, under the delivery principal's conditions. */
export const waitingCondition = (language: string): string => `waiting-${language}`;

export class BuildWaits {
  readonly #bus: MeshBus;
  readonly #log: (line: string) => void;
  readonly #signal: AbortSignal;
  readonly #waiting = new Map<string, Map<string, Candidate>>();
  /** Languages whose condition this builder has not resolved since it started. */
  readonly #unresolved = new Set<string>();
  readonly #resolvedOnce = new Set<string>();

  constructor(options: { bus: MeshBus; log: (line: string) => void; signal: AbortSignal }) {
    this.#bus = options.bus;
    this.#log = options.log;
    this.#signal = options.signal;
  }

  /** A candidate waits for `language`'s build module; the first one says the condition. */
  async wait(candidate: Candidate, language: string, why: string): Promise<void> {
    const waiting = this.#waiting.get(language) ?? new Map<string, Candidate>();
    this.#waiting.set(language, waiting);
    const first = waiting.size === 0;
    waiting.set(`${candidate.module}.${candidate.seq}`, candidate);
    if (!first && this.#unresolved.has(language)) return;
    this.#unresolved.add(language);
    this.#resolvedOnce.delete(language);
    this.#log(`waiting for ${buildModuleName(language)}: ${why}`);
    await this.#say(language, false, why);
  }

  /** The candidates waiting for `language`; they are taken off the list (they are built again). */
  waitingFor(language: string): Candidate[] {
    const waiting = this.#waiting.get(language);
    if (waiting === undefined) return [];
    this.#waiting.delete(language);
    return [...waiting.values()];
  }

  /**
   * The build module of `language` answered: a candidate no longer waits, and the condition is
   * resolved — once per start of this builder even when it saw no wait, so a condition an earlier
   * builder said before it stopped does not stay open.
   */
  async answered(candidate: Candidate | undefined, language: string): Promise<void> {
    if (candidate !== undefined)
      this.#waiting.get(language)?.delete(`${candidate.module}.${candidate.seq}`);
    if (this.#resolvedOnce.has(language)) return;
    this.#resolvedOnce.add(language);
    this.#unresolved.delete(language);
    await this.#say(language, true, `${buildModuleName(language)} answers builds again`);
  }

  async #say(language: string, resolved: boolean, why: string): Promise<void> {
    const message = resolved
      ? why
      : `builds of ${language} bundles wait for the build module ${buildModuleName(language)}, which does not answer on ${buildAskSubject(language)} (${why}); they are built once it is back: start it (mesh up starts it; elsewhere mesh build-module ${language} --credential FILE)`;
    try {
      await sayCondition(
        this.#bus,
        {
          name: waitingCondition(language),
          level: "warning",
          message,
          ...(resolved ? { resolved: true } : {}),
        },
        { signal: this.#signal },
      );
    } catch (error) {
      // The build's fate does not hang on the condition: it is said again at the next wait.
      if (resolved) this.#resolvedOnce.delete(language);
      this.#log(`the condition ${waitingCondition(language)} could not be said: ${String(error)}`);
    }
  }
}
