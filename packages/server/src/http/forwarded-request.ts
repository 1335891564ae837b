import type { Principal } from "../auth/auth";

// In a cluster, an HTTP request about a session another node owns is answered by that node
// (docs/cluster.md, "HTTP on any node"): the node the request reached authenticated the caller,
// checked that it may reach the session, and hands the request to the owner, which runs the same
// route as its own request and sends back the answer. These are the shapes of that exchange; the
// bus that carries it is `cluster/cluster-http.ts`.

/** An HTTP request one node passes to the session's owner. */
export interface ForwardedRequest {
  method: string;
  /** The URL's path and query (`/v1/sessions/s_1/messages`, `?after=3`). */
  path: string;
  search: string;
  /** Who sent it, as the node that got it authenticated them (nodes trust each other). */
  principal: Principal;
  /** The request's body, parsed (`{}` when it had none). */
  body: unknown;
}

/** The owner's answer: the status and body the caller gets. */
export interface ForwardedReply {
  status: number;
  body?: unknown;
}

/**
 * What the HTTP API needs of the cluster to answer for another node's sessions: send a request
 * to the owner (resolves with its answer; rejects with a `ServerError` naming what went wrong when
 * the owner cannot answer), and take other nodes' requests for this node's sessions.
 *
 * @example
 * ```ts
 * const reply = await forwarding.forward("n_a", { method: "POST", path, search: "", principal, body }, expiresAt);
 * ```
 */
export interface RequestForwarding {
  forward(owner: string, request: ForwardedRequest, leaseExpiresAt: number): Promise<ForwardedReply>;
  serve(handler: (request: ForwardedRequest) => Promise<ForwardedReply>): void;
}
