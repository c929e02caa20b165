/**
 * A set of strings that knows its first `k` members in code-unit order (`<`, as `sort()` orders)
 * without sorting the whole set at each change: an added member moves the first only when it
 * comes before the last of them; a removed one of the first makes them be found again by one
 * scan, when next asked. What the incremental summary's lists (the first cells needing
 * attention, leaving, differences) are kept in.
 */
export class FirstOf {
  readonly #k: number;
  readonly #members = new Set<string>();
  /** The first min(k, size) members, sorted; undefined: to be found again by a scan. */
  #first: string[] | undefined = [];

  constructor(k: number) {
    this.#k = k;
  }

  get size(): number {
    return this.#members.size;
  }

  has(member: string): boolean {
    return this.#members.has(member);
  }

  add(member: string): void {
    if (this.#members.has(member)) return;
    this.#members.add(member);
    const first = this.#first;
    if (first === undefined) return;
    // Shorter than k: every member is among the first.
    if (first.length < this.#k) insert(first, member);
    else if (this.#k > 0 && member < (first[this.#k - 1] as string)) {
      insert(first, member);
      first.pop();
    }
  }

  delete(member: string): void {
    if (!this.#members.delete(member)) return;
    const first = this.#first;
    if (first === undefined) return;
    const at = place(first, member);
    if (first[at] !== member) return;
    if (first.length < this.#k) first.splice(at, 1);
    else this.#first = undefined;
  }

  /** The first k members, in order. */
  first(): readonly string[] {
    if (this.#first === undefined) {
      const first: string[] = [];
      for (const member of this.#members) {
        if (first.length < this.#k) insert(first, member);
        else if (this.#k > 0 && member < (first[this.#k - 1] as string)) {
          insert(first, member);
          first.pop();
        }
      }
      this.#first = first;
    }
    return this.#first;
  }
}

/** Where `member` is, or would go, in the sorted `list`. */
function place(list: readonly string[], member: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as string) < member) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insert(list: string[], member: string): void {
  list.splice(place(list, member), 0, member);
}
