// Shared by the executor's tests (tool-executor*.test.ts, call-*.test.ts): a registry with an
// executor whose events are recorded, a sample tool and small promise helpers.
import { vi } from "vitest";
import { z } from "zod";
import { useFastPaths } from "../call-runner";
import { useRunCall } from "../call-step-run";
import { runPipelineFast } from "../fast-pipeline";
import { toObjectArgumentsCall } from "../object-arguments-call";
import { runCallFast } from "../run-call-fast";
import type { ToolDefinition } from "../tool-definition";
import { ToolExecutor } from "../tool-executor";
import type { ToolExecutorOptions } from "../tool-executor-options";
import { useZodFallback } from "../tool-parameters";
import { Tools } from "../tools";
import { compileZodFallback } from "../zod-fallback";

export const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export const never = () => new Promise<never>(() => {});
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function setup(definitions: ToolDefinition<any>[], options: Partial<ToolExecutorOptions> = {}) {
  const tools = new Tools(definitions);
  const executor = new ToolExecutor({ tools, sessionId: "s_1", user: { id: "u_1" }, ...options });
  const events: { type: string; payload: unknown }[] = [];
  for (const type of ["started", "progress", "say", "held", "finished"] as const) {
    executor.on(type, (payload: unknown) => events.push({ type, payload }));
  }
  return { tools, executor, events };
}

export const bookFlight = (run: ToolDefinition<any>["run"], extra: Partial<ToolDefinition<any>> = {}) => ({
  name: "book_flight",
  description: "Book a flight for the caller",
  parameters: z.object({
    flight_id: z.string().regex(/^[A-Z]{2}\d{1,4}$/),
    seats: z.number().int().min(1).max(9),
    cabin: z.enum(["economy", "business", "first"]).default("economy"),
  }),
  run,
  ...extra,
});

export const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({
  id,
  name,
  arguments: args,
});

/**
 * Runs one call of a tool without parameters (JSON Schema `{ type: "object" }`), so the JSON
 * Schema validator, imported on first use, is loaded before a test starts fake timers.
 */
export async function loadJsonSchemaValidator(): Promise<void> {
  const { executor } = setup([{ name: "warm_up", description: "Loads the validator", run: () => "ok" }]);
  await executor.execute(call("warm_up", "warm_up"));
}

/**
 * Makes executors take calls as the Node entry does: its fast paths (`useFastPaths`), `run`
 * handed only the arguments it can see (`useRunCall`) and its zod compiler. The suites run on the plain code, as a page does; node-fast-paths.test.ts runs them
 * again after this.
 */
export function useNodeEntryPaths(): void {
  useFastPaths(toObjectArgumentsCall, runPipelineFast);
  useRunCall(runCallFast);
  useZodFallback(compileZodFallback);
}

/** Counts the `AbortController`s made from now until `vi.unstubAllGlobals()`; read it with the function returned. */
export function countAbortControllers(): () => number {
  let made = 0;
  const Real = globalThis.AbortController;
  vi.stubGlobal(
    "AbortController",
    class extends Real {
      constructor() {
        super();
        made++;
      }
    },
  );
  return () => made;
}
