/**
 * The part of the WebSocket API a `ReconnectingSocket` uses. The browser's native
 * `WebSocket` and the `ws` package's `WebSocket` both fit it, so a page and a worker share it.
 *
 * @example
 * ```ts
 * const socket: WebSocketLike = new WebSocket("ws://127.0.0.1:8787/v1/client");
 * ```
 */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: any) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  /** `ws` only: drop the connection without the closing handshake. */
  terminate?: () => void;
}

/**
 * Opens a socket to a URL: one built on `ws` in Node, on the native `WebSocket` in a browser;
 * tests and unusual runtimes can pass their own.
 *
 * @example
 * ```ts
 * const createSocket: WebSocketFactory = (url) => new WebSocket(url);
 * ```
 */
export type WebSocketFactory = (url: string) => WebSocketLike;

/**
 * `WebSocket.OPEN`, spelled out so the shared code needs no WebSocket global.
 *
 * @example
 * ```ts
 * if (socket.readyState === SOCKET_OPEN) socket.send(text);
 * ```
 */
export const SOCKET_OPEN = 1;
