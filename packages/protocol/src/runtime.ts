// `@patchbay/protocol/runtime`: the small pieces every peer of the protocol runs, without zod:
// the reconnecting socket a page's client and a dispatch worker share, its backoff, the event
// emitter of the classes a page loads, and the bounded map of recent keys the server and the
// SDKs use to remember settled ids.
export type { BackoffOptions } from "./backoff";
export { backoffDelay } from "./backoff";
export type { EventArgs, EventListener, EventNames, ValidEventTypes } from "./event-emitter";
export { EventEmitter } from "./event-emitter";
export { RecentMap } from "./recent-map";
export type {
  HandshakeStep,
  HeartbeatFrame,
  ReconnectingSocketHooks,
  ReconnectingSocketOptions,
  ReconnectingSocketState,
} from "./reconnecting-socket";
export { ReconnectingSocket } from "./reconnecting-socket";
export { holdWritesForTick, writeHeldNow } from "./tick-writes";
export type { WebSocketFactory, WebSocketLike } from "./websocket-like";
export { SOCKET_OPEN } from "./websocket-like";
