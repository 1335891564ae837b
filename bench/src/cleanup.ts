// What must be stopped when a run ends however it ends: services a scenario started that are no
// peers (a PostgreSQL, a nats-server). A scenario abandoned at its deadline goes on in the
// background and never reaches its own cleanup before the run exits; the run calls these first.

const cleanups = new Set<() => Promise<void>>();

/**
 * Registers `stop` to run when the bench exits; returns a function that runs it now (once) and
 * unregisters it, for the scenario's own `finally`.
 */
export function onCleanup(stop: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = () => {
    cleanups.delete(once);
    done ??= stop().catch((error: unknown) => console.error("bench: cleanup failed:", error));
    return done;
  };
  cleanups.add(once);
  return once;
}

/** Runs every cleanup still registered (bounded: what hangs is left after `timeoutMs`). */
export async function runCleanups(timeoutMs = 15_000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all([...cleanups].map((cleanup) => cleanup())),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
}
