/** A binary min-heap of values by a number (`at`): the incremental summary's node expiries. */
export class MinHeap<T> {
  readonly #items: Array<{ at: number; value: T }> = [];

  get size(): number {
    return this.#items.length;
  }

  push(at: number, value: T): void {
    const items = this.#items;
    items.push({ at, value });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >>> 1;
      if ((items[parent] as { at: number }).at <= at) break;
      [items[i], items[parent]] = [
        items[parent] as { at: number; value: T },
        items[i] as { at: number; value: T },
      ];
      i = parent;
    }
  }

  peek(): { readonly at: number; readonly value: T } | undefined {
    return this.#items[0];
  }

  pop(): { readonly at: number; readonly value: T } | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < items.length && (items[l] as { at: number }).at < (items[least] as { at: number }).at)
        least = l;
      if (r < items.length && (items[r] as { at: number }).at < (items[least] as { at: number }).at)
        least = r;
      if (least === i) break;
      [items[i], items[least]] = [
        items[least] as { at: number; value: T },
        items[i] as { at: number; value: T },
      ];
      i = least;
    }
    return top;
  }
}
