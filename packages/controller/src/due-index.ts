/**
 * Names by when each is due (epoch ms), earliest first: what the broker asks after every pass
 * ("when is the next credential to be renewed?", "which are due now?"). Scanning every issued
 * user for it grew with the fleet: at 10,000 nodes (30,000+ users, an expiry parsed each) it was
 * the controller's largest cost per pass while nodes joined (decision 0216).
 *
 * A binary heap of (due, name); a name set again leaves its old entry behind, skipped as stale
 * (its due is no longer the name's) and dropped when it comes to the top, and the heap is
 * rebuilt when stale entries outnumber the names.
 */
/** A name and when it is due. */
type Entry = readonly [number, string];

export class DueIndex {
  readonly #at = new Map<string, number>();
  #heap: Array<Entry> = [];

  /** When `name` is due; undefined takes it out. */
  set(name: string, at: number | undefined): void {
    if (at === undefined) {
      this.#at.delete(name);
      return;
    }
    if (this.#at.get(name) === at) return;
    this.#at.set(name, at);
    this.#push([at, name]);
    if (this.#heap.length > 2 * this.#at.size + 64) this.#rebuild();
  }

  delete(name: string): void {
    this.#at.delete(name);
  }

  clear(): void {
    this.#at.clear();
    this.#heap = [];
  }

  /** The earliest due time, or undefined when nothing is due ever. */
  next(): number | undefined {
    while (this.#heap.length > 0) {
      const top = this.#heap[0] as Entry;
      if (this.#at.get(top[1]) === top[0]) return top[0];
      this.#pop();
    }
    return undefined;
  }

  /** Every name due at or before `now` (each once), earliest first; none is taken out. */
  dueBy(now: number): string[] {
    const found = new Map<string, number>();
    // Only the heap's part at or before `now` is walked: a child is never due before its parent.
    const stack = [0];
    while (stack.length > 0) {
      const i = stack.pop() as number;
      const e = this.#heap[i];
      if (e === undefined || e[0] > now) continue;
      if (this.#at.get(e[1]) === e[0]) found.set(e[1], e[0]);
      stack.push(2 * i + 1, 2 * i + 2);
    }
    return [...found].sort((a, b) => a[1] - b[1]).map(([name]) => name);
  }

  #rebuild(): void {
    const entries = [...this.#at].map(([name, at]) => [at, name] as const);
    this.#heap = [];
    for (const e of entries) this.#push(e);
  }

  #push(e: Entry): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((h[parent] as Entry)[0] <= e[0]) break;
      h[i] = h[parent] as Entry;
      i = parent;
    }
    h[i] = e;
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    const dueAt = (i: number): number => (h[i] as Entry)[0];
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const child = r < h.length && dueAt(r) < dueAt(l) ? r : l;
      if (dueAt(child) >= last[0]) break;
      h[i] = h[child] as Entry;
      i = child;
    }
    h[i] = last;
  }
}
