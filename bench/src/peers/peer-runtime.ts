// The child side of `spawnPeer`: tell the parent we are ready, answer its requests, and exit
// when the parent goes away (the IPC channel closes), so no peer outlives a bench run.

/** Sends `{ type: "ready", ...info }` to the parent. */
export function ready(info: Record<string, unknown> = {}): void {
  process.send?.({ type: "ready", ...info });
}

/** Reports a start-up failure to the parent and exits. */
export function failed(error: unknown): never {
  process.send?.({ type: "failed", error: error instanceof Error ? error.stack : String(error) });
  process.exit(1);
}

/** Answers the parent's requests (`{ type, id, ... }`) with `handler`'s result. */
export function onRequest(handler: (message: Record<string, unknown>) => Promise<unknown> | unknown): void {
  process.on("message", async (message: Record<string, unknown>) => {
    if (typeof message?.id !== "number") return;
    try {
      const result = (await handler(message)) ?? {};
      process.send?.({ ...(result as object), reply: message.id });
    } catch (error) {
      process.send?.({ reply: message.id, error: error instanceof Error ? error.message : String(error) });
    }
  });
}

process.on("disconnect", () => process.exit(0));
// A clean exit on SIGTERM lets `--cpu-prof` write the peer's profile (see BENCH_CPU_PROF).
process.on("SIGTERM", () => process.exit(0));
