import type { SessionEvent } from "./client-frames";

/** The event types that end a response: after one of them, no more events of that response come. */
type ResponseEndType = "response.completed" | "response.failed";

/**
 * The session event that ends a response: `response.completed` or `response.failed`.
 *
 * @example
 * ```ts
 * const ends: ResponseEndEvent[] = events.filter(isResponseEnd);
 * ```
 */
export type ResponseEndEvent = Extract<SessionEvent, { type: ResponseEndType }>;

/**
 * Whether an event (or any server-to-client frame) ends a response: `response.completed` or
 * `response.failed`. The one place that says which events end a reply, for whoever waits for one.
 *
 * @example
 * ```ts
 * ws.on("message", (data) => {
 *   const frame = JSON.parse(String(data)) as ServerToClientFrame;
 *   if (isResponseEnd(frame) && frame.commandId === commandId) done(frame);
 * });
 * ```
 */
export function isResponseEnd<T extends { type: string }>(
  event: T,
): event is Extract<T, { type: ResponseEndType }> {
  return event.type === "response.completed" || event.type === "response.failed";
}
