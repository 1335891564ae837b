import type { IncomingMessage, ServerResponse } from "node:http";
import { ServerError } from "../errors";
import { sendJson } from "./http-json";

/**
 * Which other origins may call the server from a browser: pages served elsewhere (a Vite dev
 * server, the browser sample) that call the HTTP API and open the client socket. Off unless set:
 * then only same-origin pages (behind one reverse proxy) and non-browser callers get through.
 *
 * @example
 * ```ts
 * createServer({ cors: { origins: ["http://localhost:5173"] } });
 * ```
 */
export interface CorsOptions {
  /** Exact origins (`scheme://host[:port]`), or `"*"` for any. */
  origins: string[] | "*";
}

/** The methods the HTTP API answers, as a preflight lists them. */
export const CORS_ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS";
/** The request headers a page may send: its user token, JSON bodies, a backend's key. */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, x-api-key";
/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = 600;

/**
 * Reads a comma-separated list of origins (`PATCHBAY_CORS_ORIGINS`, `--cors-origins`): `*` for
 * any, or origins such as `http://localhost:5173`. Each is normalized to its `URL.origin`, so a
 * trailing slash does not matter; anything that is not an origin (a path, no scheme) is an
 * `invalid_config` error rather than a silently ignored entry.
 */
export function parseCorsOrigins(text: string): CorsOptions {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.includes("*")) return { origins: "*" };
  return { origins: entries.map(normalizeOrigin) };
}

function normalizeOrigin(entry: string): string {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw new ServerError(
      "invalid_config",
      `CORS origin '${entry}' is not an origin like https://app.example.com`,
    );
  }
  if (url.origin === "null" || (url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) {
    throw new ServerError(
      "invalid_config",
      `CORS origin '${entry}' must be scheme://host[:port], with no path`,
    );
  }
  return url.origin;
}

/**
 * The CORS rules of one server: answers preflights, adds the headers that let an allowed page
 * read a response, and says whether a WebSocket upgrade's `Origin` may connect.
 */
export class CorsPolicy {
  readonly #any: boolean;
  readonly #origins: ReadonlySet<string>;

  constructor(options: CorsOptions) {
    this.#any = options.origins === "*";
    this.#origins = new Set(options.origins === "*" ? [] : options.origins.map(normalizeOrigin));
  }

  /** Whether a page of `origin` may call the server. */
  allows(origin: string): boolean {
    return this.#any || this.#origins.has(origin);
  }

  /**
   * Whether an upgrade may proceed: a request without `Origin` is not from a browser (a backend,
   * a worker) and is not the browser's to police; one with an `Origin` must be allowed.
   */
  allowsUpgrade(request: IncomingMessage): boolean {
    const origin = request.headers.origin;
    return origin === undefined || this.allows(origin);
  }

  /**
   * Adds the CORS headers for an allowed origin, and answers a preflight (`OPTIONS` with
   * `access-control-request-method`) outright: 204 with the methods and headers for an allowed
   * origin, 403 for another. Returns `true` when it answered.
   */
  handle(request: IncomingMessage, response: ServerResponse): boolean {
    const origin = request.headers.origin;
    const preflight =
      request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined;
    response.setHeader("vary", "origin");
    if (origin === undefined || !this.allows(origin)) {
      if (!preflight) return false;
      sendJson(response, 403, {
        error: { code: "forbidden", message: `origin ${origin ?? "(none)"} is not allowed` },
      });
      return true;
    }
    response.setHeader("access-control-allow-origin", this.#any ? "*" : origin);
    // A page reads retry-after to honour a 429; the rest of our headers are safelisted.
    response.setHeader("access-control-expose-headers", "retry-after");
    if (!preflight) return false;
    response.writeHead(204, {
      "access-control-allow-methods": CORS_ALLOWED_METHODS,
      "access-control-allow-headers": CORS_ALLOWED_HEADERS,
      "access-control-max-age": String(PREFLIGHT_MAX_AGE_S),
    });
    response.end();
    return true;
  }
}
