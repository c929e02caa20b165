/**
 * An asynchronous piece of work that runs at most once: the first call starts it, and every call
 * answers with that one promise — a second `stop()` or `close()` waits for the first to finish
 * instead of doing it again.
 */
export function once<T>(work: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => (started ??= work());
}
