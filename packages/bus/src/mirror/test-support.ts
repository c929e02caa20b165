/**
 * What the mirror's tests hear: every change a mirror told its `onChange`, and a wait for the
 * next one instead of a sleep.
 */
import { deadline } from "../testing/harness.js";

export class Heard<C extends { readonly key: string }> {
  readonly changes: C[] = [];
  #wake: (() => void) | undefined;

  /** Handed to the mirror as its `onChange`. */
  readonly onChange = (change: C): void => {
    this.changes.push(change);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  };

  /** The keys told from the `from`th change on. */
  keys(from = 0): Set<string> {
    return new Set(this.changes.slice(from).map((change) => change.key));
  }

  /** Resolves once `done` holds, asked again after each change; fails after `ms`. */
  async until(done: () => boolean, what: string, ms = 30_000): Promise<void> {
    await deadline(
      (async () => {
        while (!done()) await new Promise<void>((resolve) => (this.#wake = resolve));
      })(),
      ms,
      what,
    );
  }
}
