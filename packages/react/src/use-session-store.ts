import type { ClientCore } from "@patchbay/client";
import { useState } from "react";
import { type SessionOptions, SessionStore } from "./session-store";

/** The store in use, and the values that named its session. */
interface Followed {
  store: SessionStore;
  client: ClientCore;
  agent: string;
  resume: string | undefined;
}

/**
 * The store of the session that `client`, `agent` and `options.resume` name, made anew when one
 * of them changes (the hook's effect then lets go of the old store and holds the new one). The
 * values are compared, not the options object; `tools` do not name a session and are read when
 * it opens. A `resume` naming the session the store already has (the page stored `sessionId` and
 * passes it back) keeps the store. Nothing opens here: a store does nothing until retained.
 *
 * @example
 * ```ts
 * const store = useSessionStore(client, agent, options);
 * useEffect(() => store.retain(), [store]);
 * ```
 */
export function useSessionStore(client: ClientCore, agent: string, options: SessionOptions): SessionStore {
  const resume = options.resume || undefined;
  const [followed, setFollowed] = useState<Followed>(() => ({
    store: new SessionStore(client, agent, options),
    client,
    agent,
    resume,
  }));
  if (followed.client === client && followed.agent === agent && followed.resume === resume) {
    return followed.store;
  }
  const open =
    followed.client === client &&
    followed.agent === agent &&
    resume !== undefined &&
    resume === followed.store.getSnapshot().sessionId;
  // Set during render: React renders again with the new store before committing, so no render
  // shows the old session under the new arguments.
  const store = open ? followed.store : new SessionStore(client, agent, options);
  setFollowed({ store, client, agent, resume });
  return store;
}
