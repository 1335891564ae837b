import type { ConversationItem, ToolApprovalSpec, ToolSpec, User } from "@patchbay/protocol";
import { checkToolApprovalSpec } from "@patchbay/protocol/lite";
import { ToolDefinitionError } from "./errors";
import { templatePlaceholders } from "./fill-template";
import { Semaphore } from "./semaphore";
import { type CompiledParameters, compileParameters, type ToolParameters } from "./tool-parameters";

/**
 * What a running tool knows about its call, and how it talks back while it runs. It is the third
 * argument of `run`.
 *
 * @example
 * ```ts
 * run: async ({ flight_id }, signal, ctx) => {
 *   ctx.update("Checking seats on the flight");
 *   const held = await ctx.disallowInterruptions();
 *   return airline.book({ flightId: flight_id, userId: ctx.user.id, idempotencyKey: ctx.id, signal: held });
 * }
 * ```
 */
export interface ToolCallContext {
  /** The call's id. It stays the same when the call is delivered again: use it as an idempotency key. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The session the call comes from. */
  readonly sessionId: string;
  /** The user whose turn triggered the call. */
  readonly user: User;
  /**
   * The conversation as it is now. Read it, do not change it: a dispatch worker keeps these items
   * between calls of the session, so a change would be what its later calls read.
   */
  readonly conversation: readonly ConversationItem[];
  /** How many times this call id has been delivered (1 the first time). */
  readonly attempt: number;
  /** The call's signal, the same one `run` receives. */
  readonly signal: AbortSignal;
  /** Tell the user how it's going. A newer update replaces one not yet delivered; the result replaces both. */
  update(text: string): void;
  /** Ask for these exact words to be said. Never coalesced. */
  say(text: string): void;
  /**
   * From now on interrupts no longer cancel the call; only its timeout does. Resolves with a
   * signal that only the timeout aborts. Rejects with `CallNotHeld` when the call was already
   * interrupted, cancelled or timed out: then the change must not start.
   */
  disallowInterruptions(): Promise<AbortSignal>;
}

/**
 * What `approval.when` is given besides the arguments: the call as `run` would see it, without
 * the ways to talk back (the call has not started).
 *
 * @example
 * ```ts
 * when: (args, ctx) => ctx.user.id !== "admin"
 * ```
 */
export type ToolApprovalContext = Pick<
  ToolCallContext,
  "id" | "name" | "sessionId" | "user" | "conversation" | "attempt" | "signal"
>;

/**
 * How a tool asks the user before it runs. `{argument}` placeholders in `title` are filled from
 * the call's arguments. With `when`, only the calls it says yes to ask; the others run at once.
 *
 * @example
 * ```ts
 * const approval: ToolApproval<{ amount: number }> = { title: "Pay {amount} EUR?", when: ({ amount }) => amount > 100 };
 * ```
 */
export interface ToolApproval<TArgs = Record<string, unknown>> extends Omit<ToolApprovalSpec, "conditional"> {
  /**
   * Decides per call whether to ask, with the parsed arguments (as `run` gets them): `true` asks,
   * `false` runs the call without asking. It runs where the tool is defined (the server process,
   * the worker, the page), when the call arrives and before it takes a concurrency slot; the
   * question then goes through the session's approvals like any other, bound to the call. A
   * `when` that throws or rejects fails the call: the model reads a short sentence, the error
   * goes to the host's log. Default: every call asks.
   */
  when?: (args: TArgs, ctx: ToolApprovalContext) => boolean | Promise<boolean>;
}

/**
 * A tool: its name, what it does, its arguments, and the function that runs it.
 *
 * @example
 * ```ts
 * const bookFlight: ToolDefinition<{ flight_id: string; seats: number }> = {
 *   name: "book_flight",
 *   description: "Book a flight for the caller",
 *   parameters: z.object({ flight_id: z.string(), seats: z.number().int().min(1).max(9) }),
 *   approval: { title: "Book flight {flight_id}?" },
 *   run: async ({ flight_id, seats }, signal) => bookings.book(flight_id, seats, { signal }),
 * };
 * ```
 */
export interface ToolDefinition<TArgs = Record<string, unknown>> {
  /** 1 to 64 letters, digits, `_` or `-`, unique in its registry. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** A zod 3 or zod 4 object schema, or a JSON Schema object. Arguments are checked against it. Default: no arguments. */
  parameters?: ToolParameters<TArgs>;
  /**
   * Runs the tool. The return value becomes the result: a string as is, `undefined` as empty, a
   * `ToolOutput` as text and images, anything else as JSON. On Node, `signal` and `ctx` are made
   * only for a `run` that can see them (its parameter list declares them, or it reads `arguments`,
   * has a rest or default parameter, or hides its source); `run: async ({ id }) => ...` costs no
   * signal.
   */
  run: (args: TArgs, signal: AbortSignal, ctx: ToolCallContext) => unknown;
  /** Ask the user before running (every call, or those `approval.when` says yes to). */
  approval?: ToolApproval<TArgs>;
  /** What the user sees while the tool runs ("Checking where you are"). */
  displayTitle?: string;
  /** Whether an interrupt cancels the call (until it is held). Default `false`. */
  interruptible?: boolean;
  /**
   * `true`: `run`'s second argument is a light stand-in for the call's signal (`aborted`,
   * `reason`, `throwIfAborted()`, `onabort` and `add`/`removeEventListener` for `abort`), not a
   * real `AbortSignal`, which takes microseconds to make on Node 20. For a tool on a hot path that
   * only watches for the abort (the MCP connector's tools); `ctx.signal` stays a real one, for
   * `fetch` and `AbortSignal.any`. The Node entry makes the stand-in; with the browser entry the
   * tool gets the real signal. Default `false`.
   */
  lightSignal?: boolean;
  /** The call fails as `timed_out` after this long, counting the wait for a concurrency slot. Default: the executor's, 30 s. */
  timeoutMs?: number;
  /** The call fails as `timed_out` when this long passes without a progress update (or `say`), under the `timeoutMs` cap. */
  idleTimeoutMs?: number;
  /** At most this many calls of this tool run at once per session; more wait their turn. */
  concurrency?: number;
  /** At most this many calls of this tool run at once across every session that shares this registry, for rate-limited backends. */
  sharedConcurrency?: number;
}

/** A definition checked and made ready to run. Internal to the package. */
export interface CompiledTool {
  definition: ToolDefinition<any>;
  spec: ToolSpec;
  parameters: CompiledParameters;
  /** Shared by every executor that runs this registered tool (`sharedConcurrency`). */
  shared: Semaphore | undefined;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const NO_PARAMETERS = { type: "object", properties: {} } as const;

function checkLimit(name: string, field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ToolDefinitionError(name, field, `must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function checkText(name: string, field: string, value: unknown, required: boolean): void {
  if (value === undefined && !required) return;
  if (typeof value !== "string" || value.trim() === "") {
    throw new ToolDefinitionError(
      name,
      field,
      value === undefined ? "is required" : "must be a non-empty string",
    );
  }
}

/**
 * Checks a definition and prepares it: the JSON Schema, the argument checker, the spec. Throws a
 * {@link ToolDefinitionError} naming the field that is wrong.
 */
export function compileTool(definition: ToolDefinition<any>): CompiledTool {
  if (typeof definition !== "object" || definition === null) {
    throw new ToolDefinitionError(String(definition), "definition", "must be an object");
  }
  const name = definition.name;
  if (typeof name !== "string" || name === "") {
    throw new ToolDefinitionError(String(name ?? ""), "name", "is required and must be a non-empty string");
  }
  if (!NAME.test(name)) {
    throw new ToolDefinitionError(name, "name", "must be 1 to 64 letters, digits, '_' or '-'");
  }
  checkText(name, "description", definition.description, true);
  if (typeof definition.run !== "function") {
    throw new ToolDefinitionError(name, "run", "must be a function");
  }
  checkText(name, "displayTitle", definition.displayTitle, false);
  for (const flag of ["interruptible", "lightSignal"] as const) {
    if (definition[flag] !== undefined && typeof definition[flag] !== "boolean") {
      throw new ToolDefinitionError(name, flag, "must be a boolean");
    }
  }
  const timeoutMs = checkLimit(name, "timeoutMs", definition.timeoutMs);
  const idleTimeoutMs = checkLimit(name, "idleTimeoutMs", definition.idleTimeoutMs);
  checkLimit(name, "concurrency", definition.concurrency);
  const sharedConcurrency = checkLimit(name, "sharedConcurrency", definition.sharedConcurrency);

  let parameters: CompiledParameters;
  try {
    parameters = compileParameters(definition.parameters ?? NO_PARAMETERS);
  } catch (error) {
    throw new ToolDefinitionError(name, "parameters", (error as Error).message);
  }

  let approval: ToolApprovalSpec | undefined;
  if (definition.approval !== undefined) {
    const checked = checkToolApprovalSpec(definition.approval);
    if (!checked.ok) {
      throw new ToolDefinitionError(
        name,
        checked.path ? `approval.${checked.path}` : "approval",
        checked.message,
      );
    }
    approval = checked.value;
    // Set from `when` alone: a spec that says `conditional` has a function behind it.
    const when = (definition.approval as { when?: unknown }).when;
    if (when !== undefined && typeof when !== "function") {
      throw new ToolDefinitionError(name, "approval.when", "must be a function");
    }
    if (when) approval.conditional = true;
    else delete approval.conditional;
    const properties = parameters.jsonSchema.properties;
    if (properties && typeof properties === "object") {
      for (const placeholder of templatePlaceholders(approval.title)) {
        if (!Object.hasOwn(properties, placeholder)) {
          throw new ToolDefinitionError(
            name,
            "approval.title",
            `{${placeholder}} is not one of the tool's arguments`,
          );
        }
      }
      if (approval.reasonArgument !== undefined && !Object.hasOwn(properties, approval.reasonArgument)) {
        throw new ToolDefinitionError(
          name,
          "approval.reasonArgument",
          `${JSON.stringify(approval.reasonArgument)} is not one of the tool's arguments`,
        );
      }
    }
  }

  const spec: ToolSpec = { name, description: definition.description, parameters: parameters.jsonSchema };
  if (approval) spec.approval = approval;
  if (definition.displayTitle !== undefined) spec.displayTitle = definition.displayTitle;
  if (definition.interruptible !== undefined) spec.interruptible = definition.interruptible;
  if (timeoutMs !== undefined) spec.timeoutMs = timeoutMs;
  if (idleTimeoutMs !== undefined) spec.idleTimeoutMs = idleTimeoutMs;

  return {
    definition,
    spec,
    parameters,
    shared: sharedConcurrency === undefined ? undefined : new Semaphore(sharedConcurrency),
  };
}

/**
 * The spec of a tool as peers exchange it (`session.create`'s `tools`, a worker's hosted agent):
 * name, description, the JSON Schema generated from its parameters, approval, display title,
 * interruptibility and timeouts. Checks the definition like `register` does.
 *
 * @example
 * ```ts
 * toolSpecOf({ name: "get_weather", description: "Current weather", parameters: z.object({ city: z.string() }), run });
 * // { name: "get_weather", description: "Current weather", parameters: { type: "object", ... } }
 * ```
 */
export function toolSpecOf(definition: ToolDefinition<any>): ToolSpec {
  return compileTool(definition).spec;
}
