import { Client, type Session } from "@patchbay/client";

/** What a test client needs of a server: a test server or the dispatch harness. */
export interface ClientTarget {
  url: string;
  apiKey: string;
  secret: string;
  /** A user token for `userId`, signed with the server's secret. */
  token(userId: string): Promise<string>;
}

/** A browser-like client: a user token for `userId`, no API key. Closed by `closeAllClients`. */
export async function userClient(
  server: ClientTarget,
  userId: string,
  requestTimeoutMs = 5_000,
): Promise<Client> {
  const client = new Client({ baseUrl: server.url, requestTimeoutMs });
  client.setUser({ id: userId }, await server.token(userId));
  opened.push(client);
  return client;
}

/** A backend client: the API key and secret. Closed by `closeAllClients`. */
export function backendClient(server: Omit<ClientTarget, "token">, requestTimeoutMs = 5_000): Client {
  const client = new Client({
    baseUrl: server.url,
    apiKey: server.apiKey,
    secret: server.secret,
    requestTimeoutMs,
  });
  opened.push(client);
  return client;
}

const opened: Client[] = [];

/** Closes every client a test opened. */
export function closeAllClients(): void {
  for (const client of opened.splice(0)) client.close();
}

/** Resolves with the first event of a session that passes `test`. */
export function nextEvent<K extends keyof import("@patchbay/client").SessionEvents>(
  session: Session,
  name: K,
  test: (...args: import("@patchbay/client").SessionEvents[K]) => boolean = () => true,
  timeoutMs = 5_000,
): Promise<import("@patchbay/client").SessionEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      session.off(name, listener as never);
      reject(new Error(`timed out waiting for session event '${String(name)}'`));
    }, timeoutMs);
    const listener = (...args: import("@patchbay/client").SessionEvents[K]) => {
      if (!test(...args)) return;
      clearTimeout(timer);
      session.off(name, listener as never);
      resolve(args);
    };
    session.on(name, listener as never);
  });
}
