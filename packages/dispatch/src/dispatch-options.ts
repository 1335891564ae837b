// The public option, handler and event types of a dispatch worker, apart from the class
// (dispatch.ts).
import type { ClientCredentials } from "@patchbay/client";
import type { InboundCall, InboundMessage, WireError } from "@patchbay/protocol";
import type { BackoffPolicy } from "./backoff";
import type { ConversationCacheOptions } from "./conversation-cache";
import type { DispatchError } from "./dispatch-error";
import type { ConnectionState } from "./worker-connection";

/**
 * Options of {@link Dispatch}. The server URL, API key and secret come from the options, else
 * from the `client` you pass, else from the environment (`PATCHBAY_URL`, `PATCHBAY_API_KEY`,
 * `PATCHBAY_API_SECRET`).
 *
 * @example
 * ```ts
 * const options: DispatchOptions = { capacity: 8, url: "http://127.0.0.1:8787" };
 * const fromClient: DispatchOptions = { client }; // the Client's baseUrl, apiKey and secret
 * ```
 */
export interface DispatchOptions {
  /**
   * How many messages and calls this worker handles at once. Hosted tool calls do not count, so
   * a worker that only hosts tools leaves it out; one with `onMessage` or `onCall` needs it.
   */
  capacity?: number;
  /**
   * A `@patchbay/client` `Client` (made with `baseUrl`, `apiKey` and `secret`) whose server and
   * credentials the worker uses, so they are written once. `url`, `apiKey` and `secret` given
   * here too win over the client's; the environment is not read for them.
   */
  client?: DispatchClient;
  /** The server's base URL (`http://host:port`) or its worker socket URL. */
  url?: string;
  /** The API key the server is configured with. */
  apiKey?: string;
  /** The API secret the server is configured with. */
  secret?: string;
  /** Stable id of this worker across reconnects. Default: a random id per `Dispatch`. */
  workerId?: string;
  /** Reconnect backoff. Default: from 250 ms, doubling, capped at 30 s, full jitter. */
  backoff?: BackoffPolicy;
  /** How long opening the socket and the hello handshake may take. Default 10 s. */
  connectTimeoutMs?: number;
  /** How many channel sessions `sessionFor` remembers before forgetting the least recent. Default 10 000. */
  maxChannelSessions?: number;
  /** Where to read `PATCHBAY_*` settings from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Keeps each session's recent conversation between hosted calls, so the server sends each item
   * once instead of with every call (tools still read the whole of it as `ctx.conversation`).
   * Default `{ sessions: 1000, bytes: 64 MiB }`; `false` has every call carry its conversation whole.
   */
  conversationCache?: ConversationCacheOptions | false;
  /**
   * Where the worker tells the developer what went wrong in this process, at warn level: each
   * failed connection attempt (URL, reason, the wait before the next) and each tool that threw
   * (the error with its stack, the call id, the session id; the model only gets a short
   * sentence). The server's `createLogger()` fits. Default: lines on stderr; `false` for none
   * (the `reconnecting` event carries the same).
   */
  logger?: DispatchLogger | false;
}

/**
 * What a worker reads from a `Client` passed as `new Dispatch({ client })`: its `credentials`.
 *
 * @example
 * ```ts
 * const client: DispatchClient = new Client({ baseUrl: "http://127.0.0.1:8787", apiKey, secret });
 * ```
 */
export interface DispatchClient {
  readonly credentials: ClientCredentials;
}

/**
 * The part of a logger the worker uses (the server's `Logger` and pino-style wrappers fit).
 *
 * @example
 * ```ts
 * const logger: DispatchLogger = { warn: (msg, fields) => console.warn(msg, fields) };
 * ```
 */
export interface DispatchLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** The default: one readable line on stderr, with the stack of an error under it. */
/** The default logger: one line per warning on stderr. */
export const stderrLogger: DispatchLogger = {
  warn(msg, fields = {}) {
    const { error, ...rest } = fields;
    const pairs = Object.entries(rest).map(
      ([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`,
    );
    const stack =
      error instanceof Error
        ? `\n${error.stack ?? error.message}`
        : error === undefined
          ? ""
          : ` ${String(error)}`;
    process.stderr.write(
      `patchbay dispatch warn: ${msg}${pairs.length ? ` (${pairs.join(", ")})` : ""}${stack}\n`,
    );
  },
};

/**
 * What a handler is given besides the work itself.
 *
 * @example
 * ```ts
 * dispatch.onMessage(async (message, { signal }) => enrich(message, { signal }));
 * ```
 */
export interface WorkContext {
  /** The server's id of this piece of work. */
  workId: string;
  /** 1 on first delivery; higher when the server offers the work again after losing a worker. */
  attempt: number;
  /** Aborted when `stop()` runs out of time before the handler finished. */
  signal: AbortSignal;
}

/**
 * Handles one message. It resolves when the work is done; throwing reports the error to the server.
 *
 * @example
 * ```ts
 * const handler: MessageHandler = async (message) => dispatch.answer(message);
 * ```
 */
export type MessageHandler = (message: InboundMessage, context: WorkContext) => unknown;

/**
 * Handles one incoming phone call's signalling.
 *
 * @example
 * ```ts
 * const handler: CallHandler = async (call) => console.log(call.from, "->", call.to);
 * ```
 */
export type CallHandler = (call: InboundCall, context: WorkContext) => unknown;

/**
 * Options of {@link Dispatch.stop}.
 *
 * @example
 * ```ts
 * await dispatch.stop({ timeoutMs: 10_000 });
 * ```
 */
export interface StopOptions {
  /** How long running work may take to finish before it is aborted. Default 30 s. */
  timeoutMs?: number;
}

/**
 * How a stop went: whether everything running finished in time, and what did not.
 *
 * @example
 * ```ts
 * const { drained, unfinished } = await dispatch.stop();
 * ```
 */
export interface StopResult {
  drained: boolean;
  unfinished: { work: string[]; calls: string[] };
}

/**
 * The typed events of {@link Dispatch}.
 *
 * @example
 * ```ts
 * dispatch.on("work.finished", ({ workId, error }) => log(workId, error?.code));
 * ```
 */
export interface DispatchEvents {
  /** The connection moved to a new state. */
  state: (event: { state: DispatchState }) => void;
  /** The server accepted the worker (again, after a reconnect, when `reconnected`). */
  ready: (event: { workerId: string; reconnected: boolean }) => void;
  /** The socket dropped; the worker reconnects by itself. */
  disconnected: (event: { code: number; reason: string }) => void;
  /** The worker waits `delayMs` before reconnect attempt `attempt`; `reason` says why the last one ended. */
  reconnecting: (event: { attempt: number; delayMs: number; url: string; reason: string }) => void;
  /** A message or call started running in its handler. */
  "work.started": (event: { workId: string; kind: "message" | "call"; attempt: number }) => void;
  /** A message or call finished; `error` when its handler threw. */
  "work.finished": (event: { workId: string; kind: "message" | "call"; error?: WireError }) => void;
  /** Offered work was handed back (the worker is stopping, or is full). */
  "work.refused": (event: { workId: string; code: string }) => void;
  /** A hosted tool call started. */
  "hosted.started": (event: {
    callId: string;
    agent: string;
    tool: string;
    sessionId: string;
    attempt: number;
  }) => void;
  /** A hosted call was delivered again while it still ran here; it was not started twice. */
  "hosted.joined": (event: { callId: string; attempt: number }) => void;
  /** A hosted tool call finished with `outcome`. */
  "hosted.finished": (event: { callId: string; tool: string; outcome: string }) => void;
  /** How busy the worker is, as reported to the server. */
  load: (event: { active: number; capacity: number }) => void;
  /** `stop()` began: no new work is taken. */
  draining: () => void;
  /** The worker stopped. */
  stopped: (event: StopResult) => void;
  /** Something went wrong that no caller could be told about (a frame the worker cannot read). */
  error: (error: DispatchError) => void;
}

/**
 * Where the worker stands: its connection state, or `draining` while `stop()` waits for work.
 *
 * @example
 * ```ts
 * if (dispatch.state === "ready") console.log("taking work");
 * ```
 */
export type DispatchState = ConnectionState | "draining";
