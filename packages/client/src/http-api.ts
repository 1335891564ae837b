import type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  MessageItem,
  SessionEvent,
  SessionInfo,
} from "@patchbay/protocol";
import {
  AuthError,
  ClientError,
  errorFromWire,
  ProtocolViolationError,
  RateLimitedError,
  TimeoutError,
} from "./errors";

/**
 * A session and its conversation, as `GET /v1/sessions/:id` returns them.
 *
 * @example
 * ```ts
 * const { session, conversation } = await client.agent("support").sessions.get(id);
 * ```
 */
export interface SessionSnapshot {
  session: SessionInfo;
  conversation: ConversationItem[];
}

/**
 * What `POST /v1/sessions/:id/replies` answers: the assistant message the reply added.
 *
 * @example
 * ```ts
 * const { message } = await client.agent("support").sessions.reply(sessionId, "A colleague will call you.");
 * ```
 */
export interface ReplyResult {
  commandId: string;
  /** True when a reply with this `commandId` was already added (nothing changed). */
  duplicate: boolean;
  /** The assistant message that was added (absent for a duplicate). */
  message?: MessageItem;
}

/**
 * A page of a session's event log, as `GET /v1/sessions/:id/events` returns it.
 *
 * @example
 * ```ts
 * const { events, lastSeq } = await api.events("s_1", { after: 17 });
 * ```
 */
export interface EventPage {
  events: SessionEvent[];
  lastSeq: number;
}

/**
 * How {@link HttpApi} reaches the server: where it is, how to authenticate a request, and how
 * long to wait for an answer.
 */
export interface HttpApiOptions {
  baseUrl: string;
  /** The auth headers; `refresh` is true when the server refused the last ones. */
  headers: (context: { refresh: boolean }) => Promise<Record<string, string>>;
  /** Whether refused credentials are worth one retry with fresh ones (a token provider is set). */
  canRefreshAuth?: () => boolean;
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Why a connection could not be made, where the runtime says (Node); see connect-failure.ts. */
  connectFailure?: (error: unknown) => string | undefined;
}

/**
 * The server's HTTP API, for what needs no socket: get, list and delete sessions, read the event
 * log. Every failure is a typed {@link ClientError}.
 */
export class HttpApi {
  readonly #options: HttpApiOptions;
  constructor(options: HttpApiOptions) {
    this.#options = options;
  }

  /** `GET /v1/sessions/:id`. */
  getSession(sessionId: string): Promise<SessionSnapshot> {
    return this.#request("GET", `/v1/sessions/${encodeURIComponent(sessionId)}`);
  }

  /** `GET /v1/agents/:agent/sessions?userId=`. */
  async listSessions(agent: string, query: { userId?: string } = {}): Promise<SessionInfo[]> {
    const search = query.userId === undefined ? "" : `?userId=${encodeURIComponent(query.userId)}`;
    const body = await this.#request<{ sessions: SessionInfo[] }>(
      "GET",
      `/v1/agents/${encodeURIComponent(agent)}/sessions${search}`,
    );
    return body.sessions;
  }

  /** `DELETE /v1/sessions/:id`. */
  async deleteSession(sessionId: string): Promise<void> {
    await this.#request("DELETE", `/v1/sessions/${encodeURIComponent(sessionId)}`);
  }

  /** `POST /v1/sessions/:id/replies`: a reply in the backend's own words (API key only). */
  reply(
    sessionId: string,
    body: { commandId: string; text: string; messageId?: string },
  ): Promise<ReplyResult> {
    return this.#request("POST", `/v1/sessions/${encodeURIComponent(sessionId)}/replies`, body);
  }

  /** `GET /v1/sessions/:id/approvals`: the approvals waiting for the user. */
  async approvals(sessionId: string): Promise<ApprovalRequest[]> {
    const body = await this.#request<{ approvals: ApprovalRequest[] }>(
      "GET",
      `/v1/sessions/${encodeURIComponent(sessionId)}/approvals`,
    );
    return body.approvals;
  }

  /** `POST /v1/sessions/:id/approvals/:approvalId`: answers one; resolves with how it ended. */
  async decideApproval(
    sessionId: string,
    approvalId: string,
    decision: { allowed: boolean; reason?: string },
  ): Promise<ApprovalOutcome> {
    const body = await this.#request<{ outcome: ApprovalOutcome }>(
      "POST",
      `/v1/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(approvalId)}`,
      decision,
    );
    return body.outcome;
  }

  /** `GET /v1/sessions/:id/events?after=&limit=`. */
  events(sessionId: string, query: { after: number; limit?: number }): Promise<EventPage> {
    const limit = query.limit === undefined ? "" : `&limit=${query.limit}`;
    return this.#request(
      "GET",
      `/v1/sessions/${encodeURIComponent(sessionId)}/events?after=${query.after}${limit}`,
    );
  }

  async #request<T>(method: string, path: string, body?: unknown): Promise<T> {
    try {
      return await this.#attempt<T>(method, path, body, false);
    } catch (error) {
      // An expired token is refused once; a fresh one from the provider gets a second try.
      if (!(error instanceof AuthError) || !(this.#options.canRefreshAuth?.() ?? false)) throw error;
      return this.#attempt<T>(method, path, body, true);
    }
  }

  async #attempt<T>(method: string, path: string, body: unknown, refresh: boolean): Promise<T> {
    const doFetch = this.#options.fetch ?? globalThis.fetch;
    const headers: Record<string, string> = {
      accept: "application/json",
      ...(await this.#options.headers({ refresh })),
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    const timeoutMs = this.#options.timeoutMs ?? 15_000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let response: Response;
    try {
      response = await doFetch(new URL(path, this.#options.baseUrl), {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted) {
        throw new TimeoutError(`${method} ${path} got no answer within ${timeoutMs} ms`, { cause: error });
      }
      const reason = this.#options.connectFailure?.(error);
      throw new ClientError(
        "disconnected",
        reason === undefined
          ? `${method} ${path} failed: ${(error as Error).message}`
          : `cannot connect to ${this.#options.baseUrl}: ${reason}`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch (error) {
      throw new ProtocolViolationError(
        `${method} ${path} answered ${response.status} with a body that is not JSON`,
        {
          cause: error,
        },
      );
    }
    if (response.ok) return parsed as T;
    const wire = (parsed as { error?: { code?: unknown; message?: unknown; path?: unknown } } | undefined)
      ?.error;
    const code = typeof wire?.code === "string" ? wire.code : statusCode(response.status);
    const message =
      typeof wire?.message === "string" ? wire.message : `${method} ${path}: HTTP ${response.status}`;
    if (response.status === 429) {
      const retryAfter = Number(response.headers.get("retry-after"));
      throw new RateLimitedError(message, {
        wireCode: code,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
      });
    }
    const error = { code, message } as { code: string; message: string; path?: string };
    if (typeof wire?.path === "string") error.path = wire.path;
    throw errorFromWire(error);
  }
}

function statusCode(status: number): string {
  if (status === 401 || status === 403) return "unauthorized";
  if (status === 404) return "not_found";
  if (status === 400 || status === 413) return "invalid_frame";
  return "internal";
}
