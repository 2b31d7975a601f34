/**
 * What a process loads with its first use rather than at start-up (a heavy library): callers
 * share one load, and a load that failed is tried again by the next caller, never remembered.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
