import type { ClientCore, Session } from "@patchbay/client";

// A client hands every caller of `sessions.resume(id)` the one open `Session` of that id, so
// several stores of one client (a re-keyed component: the old store lets go a tick after the new
// one resumed) can hold the same object. Each store counts as a holder of the id from the moment
// it starts opening it; the session is closed only when the last holder lets go.
const holders = new WeakMap<ClientCore, Map<string, number>>();

function countsOf(client: ClientCore): Map<string, number> {
  let counts = holders.get(client);
  if (!counts) {
    counts = new Map();
    holders.set(client, counts);
  }
  return counts;
}

/** Counts one more holder of session `id` of `client`. */
export function holdSession(client: ClientCore, id: string): void {
  const counts = countsOf(client);
  counts.set(id, (counts.get(id) ?? 0) + 1);
}

/** Lets go of session `id`; closes `session` (when given) if no other holder is left. */
export function releaseSession(client: ClientCore, id: string, session?: Session): void {
  const counts = countsOf(client);
  const left = (counts.get(id) ?? 1) - 1;
  if (left > 0) {
    counts.set(id, left);
    return;
  }
  counts.delete(id);
  session?.close();
}

/** How many holders session `id` of `client` has (for tests). */
export function sessionHolders(client: ClientCore, id: string): number {
  return holders.get(client)?.get(id) ?? 0;
}
