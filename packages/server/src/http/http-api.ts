import type { IncomingMessage, ServerResponse } from "node:http";
import { IdSchema, ImageContentSchema, JsonObjectSchema } from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import { z } from "zod";
import type { Authenticator, Principal } from "../auth/auth";
import { ServerError, SessionElsewhereError, toWireError } from "../errors";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import type { SessionDirectory } from "../sessions/session-directory";
import { TokenBucket } from "../sockets/rate-limit";
import type { CorsPolicy } from "./cors";
import type { ForwardedReply, ForwardedRequest, RequestForwarding } from "./forwarded-request";
import { parseBody, readJsonBody, sendError, sendJson } from "./http-json";

const CreateSessionBody = z.strictObject({
  userId: IdSchema.optional(),
  metadata: JsonObjectSchema.optional(),
});

const SendMessageBody = z.strictObject({
  commandId: IdSchema,
  text: z.string().max(100_000),
  images: z.array(ImageContentSchema).max(16).optional(),
});

const InterruptBody = z.strictObject({ commandId: IdSchema });
const DecideBody = z.strictObject({ allowed: z.boolean(), reason: z.string().max(1_000).optional() });

const ReplyBody = z.strictObject({
  commandId: IdSchema,
  text: z.string().min(1).max(100_000),
  messageId: IdSchema.optional(),
});

/**
 * Limits of the HTTP API.
 *
 * @example
 * ```ts
 * const limits: HttpApiLimits = { maxBodyBytes: 6 * 1024 * 1024, rateBurst: 100, ratePerSecond: 50 };
 * ```
 */
export interface HttpApiLimits {
  /** Request bodies over this answer 413. */
  maxBodyBytes: number;
  /** Per caller (API key, or user) request burst. */
  rateBurst: number;
  /** Per caller requests per second. */
  ratePerSecond: number;
}

/**
 * The defaults of {@link HttpApiLimits}.
 *
 * @example
 * ```ts
 * DEFAULT_HTTP_LIMITS.maxBodyBytes; // 6 MiB: a message with an image of up to 5 MiB fits
 * ```
 */
export const DEFAULT_HTTP_LIMITS: HttpApiLimits = {
  maxBodyBytes: 6 * 1024 * 1024,
  rateBurst: 200,
  ratePerSecond: 100,
};

/**
 * A request handler that may take a route before the built-in ones answer 404 (the dispatch
 * module's inbound routes). Resolves `true` when it answered.
 *
 * @example
 * ```ts
 * const extra: HttpRouteExtension = async (req, res) => req.url?.startsWith("/v1/agents/") && req.url.includes("/inbound/") ? handle(req, res) : false;
 * ```
 */
export type HttpRouteExtension = (
  request: IncomingMessage,
  response: ServerResponse,
) => Promise<boolean> | boolean;

/** What the HTTP API is built from. */
export interface HttpApiOptions {
  authenticator: Authenticator;
  sessions: SessionDirectory;
  metrics: ServerMetrics;
  logger: Logger;
  /** `/readyz` answers 503 while this is false (starting or shutting down). */
  isReady: () => boolean;
  /** More to say in `/readyz`'s body (connectors that are down, and why). */
  readiness?: () => Record<string, unknown>;
  limits?: Partial<HttpApiLimits>;
  extensions?: HttpRouteExtension[];
  /** Lets pages of other origins call the API (preflights, `access-control-*`). Off when absent. */
  cors?: CorsPolicy;
  /**
   * Cluster mode: a request about a session another node owns is answered by that node, and this
   * node answers the requests other nodes pass here (docs/cluster.md, "HTTP on any node").
   */
  forwarding?: RequestForwarding;
}

type Handler = (ctx: {
  principal: Principal;
  params: string[];
  url: URL;
  body: () => Promise<unknown>;
}) => Promise<Reply>;

interface Reply {
  status: number;
  body?: unknown;
}

interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

/**
 * The HTTP API for what a backend does without a socket (see the README for every route).
 * Errors are `{ "error": { "code", "message", "path"? } }` with the status of their code.
 */
export function createHttpApi(
  options: HttpApiOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const limits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const { sessions } = options;
  // Bounded: the oldest callers are forgotten rather than the map growing without end.
  const buckets = new RecentMap<TokenBucket>(10_000);
  // One options object shared by every caller's bucket.
  const callerRate = { capacity: limits.rateBurst, refillPerSecond: limits.ratePerSecond };

  const routes: Route[] = [
    {
      method: "POST",
      pattern: /^\/v1\/agents\/([^/]+)\/sessions$/,
      handler: async ({ principal, params, body }) => {
        const input = parseBody(CreateSessionBody, await body());
        const info = await sessions.create(principal, params[0]!, {
          ...(input.userId === undefined ? {} : { userId: input.userId }),
          ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
        });
        return { status: 201, body: info };
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/agents\/([^/]+)\/sessions$/,
      handler: async ({ principal, params, url }) => {
        const userId = url.searchParams.get("userId") ?? undefined;
        const limit = optionalInt(url, "limit", 1, 1000);
        return { status: 200, body: { sessions: await sessions.list(principal, params[0]!, userId, limit) } };
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/sessions\/([^/]+)$/,
      handler: async ({ principal, params }) => ({
        status: 200,
        body: await sessions.get(principal, params[0]!),
      }),
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/sessions\/([^/]+)$/,
      handler: async ({ principal, params }) => {
        await sessions.delete(principal, params[0]!);
        return { status: 204 };
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/sessions\/([^/]+)\/messages$/,
      handler: async ({ principal, params, body }) => {
        const input = parseBody(SendMessageBody, await body());
        const { live, release } = await sessions.acquire(principal, params[0]!);
        try {
          const { duplicate } = await live.sendMessage({
            commandId: input.commandId,
            text: input.text,
            sender: principal.kind,
            ...(input.images === undefined ? {} : { images: input.images }),
          });
          return { status: 202, body: { commandId: input.commandId, duplicate } };
        } finally {
          // The session stays loaded while the turn the message started runs.
          void live.idle().finally(release);
        }
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/sessions\/([^/]+)\/replies$/,
      handler: async ({ principal, params, body }) => {
        if (principal.kind !== "backend") {
          throw new ServerError(
            "forbidden",
            "a reply in the backend's own words needs the API key, not a user token",
          );
        }
        const input = parseBody(ReplyBody, await body());
        const { live, release } = await sessions.acquire(principal, params[0]!);
        try {
          const { duplicate, item } = await live.reply({
            commandId: input.commandId,
            text: input.text,
            ...(input.messageId === undefined ? {} : { messageId: input.messageId }),
          });
          return {
            status: duplicate ? 200 : 201,
            body: { commandId: input.commandId, duplicate, ...(item ? { message: item } : {}) },
          };
        } finally {
          release();
        }
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/sessions\/([^/]+)\/interrupt$/,
      handler: async ({ principal, params, body }) => {
        const input = parseBody(InterruptBody, await body());
        const { live, release } = await sessions.acquire(principal, params[0]!);
        try {
          const { duplicate } = await live.interrupt(input.commandId);
          return { status: 202, body: { commandId: input.commandId, duplicate } };
        } finally {
          release();
        }
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/sessions\/([^/]+)\/approvals$/,
      handler: async ({ principal, params }) => {
        const { live, release } = await sessions.acquire(principal, params[0]!);
        try {
          return { status: 200, body: { approvals: live.approvals.pending() } };
        } finally {
          release();
        }
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/sessions\/([^/]+)\/approvals\/([^/]+)$/,
      handler: async ({ principal, params, body }) => {
        const input = parseBody(DecideBody, await body());
        const approvalId = params[1]!;
        const { live, release } = await sessions.acquire(principal, params[0]!);
        try {
          // An answer that came too late says how the approval ended, as `session.decide` does.
          const ended = live.approvals.endedAs(approvalId);
          if (ended !== undefined) return { status: 200, body: { approvalId, outcome: ended } };
          live.approvals.decide(approvalId, input.allowed, input.reason);
          return { status: 200, body: { approvalId, outcome: input.allowed ? "allowed" : "declined" } };
        } finally {
          release();
        }
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/sessions\/([^/]+)\/events$/,
      handler: async ({ principal, params, url }) => {
        const after = optionalInt(url, "after", 0, Number.MAX_SAFE_INTEGER) ?? 0;
        const limit = optionalInt(url, "limit", 1, 1000) ?? 100;
        return { status: 200, body: await sessions.events(principal, params[0]!, after, limit) };
      },
    },
  ];

  function rateLimit(principal: Principal): void {
    const key = principal.kind === "user" ? `u:${principal.userId}` : "backend";
    let bucket = buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket(callerRate);
      buckets.set(key, bucket);
    }
    if (!bucket.take()) {
      throw new RateLimited(bucket.retryAfterMs());
    }
  }

  /**
   * Runs a route. A session another node owns (its lease is live elsewhere) is that node's to
   * answer: the request goes there once (`mayForward`; the owner never passes it on again).
   */
  async function runRoute(
    route: Route,
    principal: Principal,
    url: URL,
    body: () => Promise<unknown>,
    mayForward: boolean,
  ): Promise<Reply> {
    const params = route.pattern.exec(url.pathname)!.slice(1).map(decodePathSegment);
    try {
      return await route.handler({ principal, params, url, body });
    } catch (error) {
      if (!(error instanceof SessionElsewhereError) || !mayForward || !options.forwarding) throw error;
      const request: ForwardedRequest = {
        method: route.method,
        path: url.pathname,
        search: url.search,
        principal,
        body: await body(),
      };
      return options.forwarding.forward(error.owner, request, error.expiresAt);
    }
  }

  // The owner's side: a request another node passed here runs as this node's own would.
  options.forwarding?.serve(async (request): Promise<ForwardedReply> => {
    try {
      const url = parseRequestUrl(`${request.path}${request.search}`);
      const route = routes.find((r) => r.method === request.method && r.pattern.test(url.pathname));
      if (!route) throw new ServerError("not_found", `no route for ${request.method} ${url.pathname}`);
      return await runRoute(route, request.principal, url, () => Promise.resolve(request.body), false);
    } catch (error) {
      if (!(error instanceof ServerError))
        options.logger.error("http request from another node failed", { path: request.path, error });
      return {
        status: error instanceof ServerError ? error.status : 500,
        body: { error: toWireError(error) },
      };
    }
  });

  return async (req, res) => {
    let url = new URL("http://localhost/");
    try {
      url = parseRequestUrl(req.url);
      if (options.cors?.handle(req, res)) return;
      if (url.pathname === "/healthz") return sendJson(res, 200, { status: "ok" });
      if (url.pathname === "/readyz") {
        const more = options.readiness?.() ?? {};
        return options.isReady()
          ? sendJson(res, 200, { status: "ready", ...more })
          : sendJson(res, 503, { status: "unavailable", ...more });
      }
      if (url.pathname === "/metrics" && req.method === "GET") {
        const text = await options.metrics.render();
        res.writeHead(200, { "content-type": options.metrics.contentType });
        res.end(text);
        return;
      }
      for (const extension of options.extensions ?? []) {
        if (await extension(req, res)) return;
      }
      const matching = routes.filter((route) => route.pattern.test(url.pathname));
      if (matching.length === 0) throw new ServerError("not_found", `no route for ${url.pathname}`);
      const route = matching.find((candidate) => candidate.method === req.method);
      if (!route) {
        res.setHeader("allow", matching.map((candidate) => candidate.method).join(", "));
        return sendJson(res, 405, {
          error: { code: "method_not_allowed", message: `${req.method} is not allowed on ${url.pathname}` },
        });
      }
      const principal = await options.authenticator.fromHttpHeaders(req.headers);
      rateLimit(principal);
      let read: Promise<unknown> | undefined;
      const body = () => {
        read ??= readJsonBody(req, limits.maxBodyBytes);
        return read;
      };
      const reply = await runRoute(route, principal, url, body, true);
      return sendJson(res, reply.status, reply.body);
    } catch (error) {
      const retryAfterMs = (error as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
      if (error instanceof ServerError && typeof retryAfterMs === "number") {
        res.setHeader("retry-after", String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
      }
      sendError(res, error, (unexpected) =>
        options.logger.error("http request failed", { path: url.pathname, error: unexpected }),
      );
    }
  };
}

/** The request's URL; one that does not parse is a 400, not a 500 (nor a crash). */
function parseRequestUrl(raw: string | undefined): URL {
  try {
    return new URL(raw ?? "/", "http://localhost");
  } catch {
    throw new ServerError("invalid_request", "the request URL does not parse", { path: "url" });
  }
}

/** One path parameter, percent-decoded; a malformed escape (`%E0%A4%A`) is a 400 naming it. */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ServerError(
      "invalid_request",
      `the path segment '${segment.slice(0, 100)}' is not valid percent-encoded UTF-8`,
      { path: "url" },
    );
  }
}

class RateLimited extends ServerError {
  constructor(readonly retryAfterMs: number) {
    super("rate_limited", `too many requests; retry in ${retryAfterMs} ms`);
  }
}

function optionalInt(url: URL, name: string, min: number, max: number): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ServerError("invalid_request", `${name} must be an integer from ${min} to ${max}`, {
      path: name,
    });
  }
  return value;
}
