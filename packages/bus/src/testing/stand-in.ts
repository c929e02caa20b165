/**
 * A stand-in for what a suite's `before` hook makes, handed out when the suite is declared: each
 * property read goes to the value `made()` returns then (a method bound to it), and is refused,
 * naming `what`, before the hook made it. Read it inside the tests and later hooks, never at the
 * describe's level.
 */
export function standIn<T extends object>(what: string, made: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_target, key) {
      const value = made();
      if (value === undefined) throw new Error(`${what}: read before its before hook made it`);
      const property: unknown = Reflect.get(value, key, value);
      return typeof property === "function" ? (property as () => unknown).bind(value) : property;
    },
  });
}
