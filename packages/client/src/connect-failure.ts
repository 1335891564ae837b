/** Reasons by Node's error code for a connection that cannot be made at all. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused (nothing listens at that address)",
  ENOTFOUND: "the host name does not resolve (DNS)",
  EAI_AGAIN: "the DNS lookup failed (EAI_AGAIN)",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable",
};

/**
 * Why a connection could not be made, when the error says so plainly enough to stop retrying:
 * refused, DNS, TLS, or a server that answered HTTP instead of opening the socket. Undefined
 * for anything else (a reset, a timeout), which is worth another attempt. Works on `ws`'s error
 * events and on `fetch`'s `TypeError: fetch failed` (the reason is its `cause`); a browser hides
 * these details, so there it is always undefined.
 */
export function connectFailure(error: unknown): string | undefined {
  for (let e = error as any, depth = 0; e && depth < 4; e = e.cause ?? e.error, depth++) {
    const code = typeof e.code === "string" ? e.code : undefined;
    if (code && REASONS[code]) return REASONS[code];
    if (code && (code === "EPROTO" || /CERT|TLS|SSL/.test(code))) return `TLS failed: ${e.message} (${code})`;
    const status = /^Unexpected server response: (\d+)/.exec(
      typeof e.message === "string" ? e.message : "",
    )?.[1];
    if (status) {
      return `the server answered HTTP ${status} instead of opening the socket (is this the Patchbay server's address?)`;
    }
  }
  return undefined;
}
