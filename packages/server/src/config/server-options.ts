import { Tools } from "@patchbay/tools";
import { z } from "zod";
import { ServerError } from "../errors";
import { LOG_LEVELS } from "../observability/logger";
import { closest } from "./config-keys";

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === "function", what);
const object = (what: string) =>
  z.custom<object>((v) => typeof v === "object" && v !== null && !Array.isArray(v), what);
const logger = z.custom<object>(
  (v) =>
    typeof v === "object" &&
    v !== null &&
    ["debug", "info", "warn", "error", "child"].every(
      (m) => typeof (v as Record<string, unknown>)[m] === "function",
    ),
  "expected a logger with debug, info, warn, error and child",
);

/**
 * What `createServer` checks before it opens anything: the types of the options a caller is most
 * likely to get wrong in plain JavaScript or with a cast, each named by its field path. The
 * store, dispatch and limits objects are checked where they are used.
 */
const ServerOptionsSchema = z.object({
  mode: z.enum(["development", "production"]).optional(),
  port: z.number().int().min(0).max(65_535).optional(),
  host: z.string().min(1).optional(),
  dataDir: z.string().min(1).optional(),
  databaseUrl: z.string().min(1).optional(),
  store: object("expected a Store").optional(),
  configDir: z.string().min(1).optional(),
  agents: z.record(z.string(), object("expected an agent (instructions, model, ...)")).optional(),
  apiKey: z.string().min(1).optional(),
  secret: z.string().min(1).optional(),
  tools: z
    .custom<Tools>((v) => v instanceof Tools, {
      error: (issue) =>
        Array.isArray(issue.input)
          ? "expected a Tools registry, got an array: const tools = new Tools(); tools.register(...) for each"
          : "expected a Tools registry (new Tools() from @patchbay/tools)",
    })
    .optional(),
  createModel: fn("expected a function (agent) => LanguageModel").optional(),
  // process.env is not a plain object, so a record schema would refuse it.
  env: object("expected an object of environment variables, like process.env").optional(),
  logger: logger.optional(),
  logLevel: z.enum(LOG_LEVELS as [string, ...string[]]).optional(),
  clientSocket: object("expected an object of limits").optional(),
  http: object("expected an object of limits").optional(),
  progressIntervalMs: z.number().int().min(0).optional(),
  shutdownGraceMs: z.number().int().min(0).optional(),
  idempotencyStore: z
    .custom<object>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as { get?: unknown }).get === "function" &&
        typeof (v as { set?: unknown }).set === "function",
      { error: "expected an IdempotencyStore: an object with get(key) and set(key, result) methods" },
    )
    .optional(),
  dispatch: z.union([fn("expected a function or false"), z.literal(false)]).optional(),
  processMetrics: z.boolean().optional(),
  cors: z.object({ origins: z.union([z.array(z.string()), z.literal("*")]) }).optional(),
  limits: object("expected an object of limits (see docs/security.md)").optional(),
  connectors: z.array(object("expected a connector (defineConnector from @patchbay/connectors)")).optional(),
  connectorStartTimeoutMs: z.number().int().min(0).optional(),
  natsUrl: z.string().min(1).optional(),
  cluster: z
    .object({
      bus: object("expected a Bus (NatsBus, MemoryBus)").optional(),
      nodeId: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and -, at most 64")
        .optional(),
      leaseTtlMs: z.number().int().min(300).max(600_000).optional(),
      heartbeatIntervalMs: z.number().int().min(50).max(60_000).optional(),
    })
    .optional(),
});

/** Every option name `checkServerOptions` knows, for the test that keeps it equal to `CreateServerOptions`. */
export const KNOWN_SERVER_OPTIONS: readonly string[] = Object.keys(ServerOptionsSchema.shape);

/**
 * Checks `createServer`'s options up front, so a wrong one is refused at once with its field
 * path (`createServer: tools: expected a Tools registry, got an array ...`) instead of failing
 * later as an internal error. Unknown options are reported through `warn` with the closest known
 * name (they may belong to a newer version), not refused.
 */
export function checkServerOptions(options: unknown, warn: (message: string) => void): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ServerError("invalid_config", "createServer: expected an options object");
  }
  const parsed = ServerOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map(String).join(".");
    throw new ServerError("invalid_config", `createServer: ${path}: ${issue.message}`, { path });
  }
  const known = Object.keys(ServerOptionsSchema.shape);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const suggestion = closest(key, known);
    warn(
      `createServer: unknown option '${key}'${suggestion ? ` (did you mean '${suggestion}'?)` : ""}; it is ignored`,
    );
  }
}
