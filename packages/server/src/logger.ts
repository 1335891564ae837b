/**
 * Log levels, quietest last.
 *
 * @example
 * ```ts
 * const level: LogLevel = "info";
 * ```
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/**
 * The levels a `--log-level` flag accepts.
 *
 * @example
 * ```ts
 * LOG_LEVELS.includes("debug"); // true
 * ```
 */
export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error", "silent"];

/**
 * A small structured logger: one JSON object per line with `time`, `level`, `msg` and fields.
 *
 * @example
 * ```ts
 * logger.info("session created", { sessionId });
 * logger.child({ sessionId }).warn("tool result dropped", { callId });
 * ```
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

/**
 * Options of {@link createLogger}.
 *
 * @example
 * ```ts
 * createLogger({ level: "debug", write: (line) => lines.push(line) });
 * ```
 */
export interface LoggerOptions {
  level?: LogLevel;
  /** Where each line goes; stderr by default so stdout stays free for the program. */
  write?: (line: string) => void;
  fields?: Record<string, unknown>;
}

/**
 * Creates a structured logger.
 *
 * @example
 * ```ts
 * const logger = createLogger({ level: "info" });
 * logger.info("listening", { url });
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const base = options.fields ?? {};
  const log = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < threshold) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }, errorReplacer));
  };
  return {
    debug: (msg, fields) => log("debug", msg, fields),
    info: (msg, fields) => log("info", msg, fields),
    warn: (msg, fields) => log("warn", msg, fields),
    error: (msg, fields) => log("error", msg, fields),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  // Error objects stringify as {} by default, which hides exactly what a log is read for.
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

/**
 * A logger that drops everything, for embedding and tests.
 *
 * @example
 * ```ts
 * createServer({ logger: silentLogger });
 * ```
 */
export const silentLogger: Logger = createLogger({ level: "silent" });
