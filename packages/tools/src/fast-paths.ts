import type { NormalizedToolCall } from "@patchbay/protocol";
import type { ValidationResult } from "./validate-arguments";

/** Counts of deliveries by call id: a `RecentMap`, or the Node entry's `DeliveryCounts`. */
export interface DeliveryCounter {
  get(id: string): number | undefined;
  set(id: string, count: number): unknown;
}

/** `setTimeout` and `clearTimeout` as the executor arms a call's timers. */
export interface Timers {
  setTimeout<A, B>(fn: (a: A, b: B) => void, ms: number, a: A, b: B): unknown;
  clearTimeout(timer: unknown): void;
}

/**
 * What the Node entry (index.ts) installs for a server's call rates, in place of the plainer
 * code a page keeps: a page runs a few calls, and its bundle has a size budget (see the
 * client's browser-bundle-size script). Each part does what the code it replaces does.
 */
export const fastPaths: {
  /** The executor's delivery counts (delivery-counts.ts) instead of a `RecentMap`. */
  counts?: (limit: number) => DeliveryCounter;
  /**
   * A call given object arguments (object-arguments-call.ts) instead of an object literal;
   * undefined for other arguments.
   */
  objectCall?: (
    input: { id: string; name: string; arguments?: unknown; argumentsError?: string },
    index: number,
  ) => NormalizedToolCall | undefined;
  /** A zod 4 schema's check (zod-run.ts) instead of awaiting `safeParseAsync`; undefined if it cannot. */
  zodParse?: (
    schema: object,
    parseAsync: (value: unknown, params?: object) => Promise<unknown>,
  ) =>
    | ((args: Record<string, unknown>) => ValidationResult<unknown> | Promise<ValidationResult<unknown>>)
    | undefined;
  /** The calls' timeouts and idle timeouts (timer-lists.ts) instead of the global timers. */
  timers?: Timers;
} = {};
