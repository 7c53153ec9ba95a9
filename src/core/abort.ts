/**
 * Abort subscriptions that add at most one listener to a signal, however many subscribe. A Lambda invocation's
 * signal is shared by every record of its batch (each lease, each back-off sleep, each handler's combined signal);
 * one listener each would pass Node's default limit of 10 and print a MaxListenersExceededWarning on every batch of
 * a few records. Raising the limit would only hide a real leak, so the subscribers share one listener instead.
 */

interface Subscribers {
  readonly listeners: Set<() => void>;
  readonly dispatch: () => void;
}

const bySignal = new WeakMap<AbortSignal, Subscribers>();

/**
 * Calls `listener` once when `signal` aborts, until the returned function unsubscribes (call it in `finally`).
 * Like `addEventListener`, nothing is called for a signal that is aborted already: check `signal.aborted` first.
 * The signal's one listener is removed when its last subscriber leaves.
 */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  if (signal.aborted) return () => {};
  let subscribers = bySignal.get(signal);
  if (!subscribers) {
    const listeners = new Set<() => void>();
    const dispatch = () => {
      bySignal.delete(signal);
      // A copy: a listener may unsubscribe others (or itself) while they are called.
      for (const l of [...listeners]) {
        try {
          l();
        } catch (error) {
          // As EventTarget does: report it, and still call the other listeners.
          queueMicrotask(() => {
            throw error;
          });
        }
      }
      listeners.clear();
    };
    subscribers = { listeners, dispatch };
    bySignal.set(signal, subscribers);
    signal.addEventListener("abort", dispatch, { once: true });
  }
  // A wrapper per subscription: the same function subscribed twice is two subscriptions, as with addEventListener.
  const entry = () => listener();
  const { listeners, dispatch } = subscribers;
  listeners.add(entry);
  return () => {
    if (!listeners.delete(entry) || listeners.size > 0 || bySignal.get(signal) !== subscribers) return;
    bySignal.delete(signal);
    signal.removeEventListener("abort", dispatch);
  };
}
