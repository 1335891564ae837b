import { isResponseEnd, type SessionEvent } from "@patchbay/protocol";
import { createUserToken } from "../auth/user-token";

/** The backend's HTTP API as this package's tests drive it (API key and secret of the test server). */
export interface BackendHttp {
  /** The headers a backend request carries. */
  readonly headers: Record<string, string>;
  /** A POST with the backend's headers unless `headers` are given. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A GET (or, with a body, a POST) answered with JSON. */
  json<T>(path: string, body?: unknown): Promise<T>;
  /** Creates a session of `agent` for `userId` (201 expected) and resolves with its id. */
  createSession(agent: string, userId?: string): Promise<string>;
  /** Sends a message (202 expected); `as: "user"` sends it with user u_1's token, as a page would. */
  send(sessionId: string, body: string | Record<string, unknown>, as?: "backend" | "user"): Promise<void>;
  /** Every event of the session so far. */
  events(sessionId: string): Promise<SessionEvent[]>;
  /** The session's events once `count` turns have ended (completed or failed). */
  turnsEnded(sessionId: string, count?: number, timeoutMs?: number): Promise<SessionEvent[]>;
}

/** The backend HTTP API of the server at `url`, with the test server's credentials by default. */
export function backendHttp(url: string, apiKey = "pk_test", secret = "sk_test"): BackendHttp {
  const headers = {
    "x-api-key": apiKey,
    authorization: `Bearer ${secret}`,
    "content-type": "application/json",
  };
  const post = (path: string, body: unknown, given: Record<string, string> = headers) =>
    fetch(`${url}${path}`, { method: "POST", headers: given, body: JSON.stringify(body) });
  const expectStatus = async (res: Response, status: number, what: string) => {
    if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  };
  const api: BackendHttp = {
    headers,
    post,
    async json<T>(path: string, body?: unknown): Promise<T> {
      const res = body === undefined ? await fetch(`${url}${path}`, { headers }) : await post(path, body);
      return (await res.json()) as T;
    },
    async createSession(agent, userId = "u_1") {
      const res = await post(`/v1/agents/${agent}/sessions`, { userId });
      await expectStatus(res, 201, `creating a session of ${agent}`);
      return ((await res.json()) as { id: string }).id;
    },
    async send(sessionId, body, as = "backend") {
      const given =
        as === "backend"
          ? headers
          : {
              authorization: `Bearer ${await createUserToken(secret, "u_1", { expiresIn: "5m" })}`,
              "content-type": "application/json",
            };
      const fields = typeof body === "string" ? { text: body } : body;
      const res = await post(
        `/v1/sessions/${sessionId}/messages`,
        { commandId: `c_${Math.random()}`, ...fields },
        given,
      );
      await expectStatus(res, 202, `sending to ${sessionId}`);
    },
    async events(sessionId) {
      return (await api.json<{ events: SessionEvent[] }>(`/v1/sessions/${sessionId}/events?after=0`)).events;
    },
    async turnsEnded(sessionId, count = 1, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const list = await api.events(sessionId);
        const ended = list.filter(isResponseEnd);
        if (ended.length >= count) return list;
        if (Date.now() > deadline)
          throw new Error(
            `${count} turn(s) did not end within ${timeoutMs} ms: ${list.map((e) => e.type).join(", ")}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
  return api;
}
