import { DispatchError } from "./dispatch-error";

/** The path of the worker socket on a Patchbay server. */
export const WORKER_PATH = "/v1/worker";

/**
 * The WebSocket URL of a server's worker socket, from the server's base URL as a user writes it
 * (`http://host:8787`, `https://agents.example.com/base`, or the socket URL itself).
 *
 * @example
 * ```ts
 * workerSocketUrl("http://127.0.0.1:8787"); // "ws://127.0.0.1:8787/v1/worker"
 * ```
 */
export function workerSocketUrl(base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch (cause) {
    throw new DispatchError("invalid_options", `url: '${base}' is not a URL`, { path: "url", cause });
  }
  const schemes: Record<string, string> = { "http:": "ws:", "https:": "wss:", "ws:": "ws:", "wss:": "wss:" };
  const scheme = schemes[url.protocol];
  if (!scheme) {
    throw new DispatchError(
      "invalid_options",
      `url: '${base}' must be http(s) or ws(s), not ${url.protocol}`,
      { path: "url" },
    );
  }
  url.protocol = scheme;
  const path = url.pathname.replace(/\/+$/, "");
  url.pathname = path.endsWith(WORKER_PATH) ? path : `${path}${WORKER_PATH}`;
  url.hash = "";
  return url.toString();
}
