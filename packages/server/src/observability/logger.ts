import { Writable } from "node:stream";
import pino, { type DestinationStream, type Logger as PinoLogger } from "pino";
import pretty from "pino-pretty";

/**
 * Log levels, quietest last.
 *
 * @example
 * ```ts
 * const level: LogLevel = "info";
 * ```
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

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
 * The structured logger the server writes to (see {@link createLogger}: pino, JSON lines or pretty).
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
  /** Where each JSON line goes (tests, your own transport). Default: stderr, so stdout stays free for the program. */
  write?: (line: string) => void;
  fields?: Record<string, unknown>;
  /**
   * `pretty`: readable colored lines (pino-pretty), `json`: one JSON object per line.
   * Default: pretty when stderr is a terminal and `write` is not given, else JSON.
   */
  format?: "json" | "pretty";
}

/**
 * Creates a structured logger on pino: JSON lines with `time` (ISO), `level` (its name), `msg`
 * and the fields; an `error` field is serialized with its type, message and stack, and its
 * `cause` the same way. In a
 * terminal it prints pino-pretty's readable lines instead.
 *
 * @example
 * ```ts
 * const logger = createLogger({ level: "info" });
 * logger.info("listening", { url });
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const write = options.write;
  const format = options.format ?? (write === undefined && process.stderr.isTTY ? "pretty" : "json");
  const lines =
    write === undefined
      ? undefined
      : new Writable({
          write(chunk, _encoding, done) {
            const text = String(chunk);
            write(text.endsWith("\n") ? text.slice(0, -1) : text);
            done();
          },
        });
  const destination: DestinationStream =
    format === "pretty"
      ? pretty({
          destination: lines ?? 2,
          sync: true,
          colorize: lines === undefined,
          translateTime: "SYS:HH:MM:ss.l",
          ignore: "pid,hostname",
        })
      : (lines ?? pino.destination({ fd: 2, sync: true }));
  const base = pino(
    {
      level: options.level ?? "info",
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // The cause chain as objects (`cause`, each with its own type, message and stack), not
      // appended to `message`: an error that already says its cause would say it twice.
      serializers: { error: pino.stdSerializers.errWithCause, err: pino.stdSerializers.errWithCause },
    },
    destination,
  );
  return wrap(options.fields ? base.child(options.fields) : base);
}

/** Our `(msg, fields)` order on pino's `(fields, msg)`. */
function wrap(logger: PinoLogger): Logger {
  return new PinoAdapter(logger, undefined, undefined);
}

/**
 * One object per logger, its methods on the prototype, and pino's child made on the first line
 * written: every loaded session and connection holds a child logger and most never write a line,
 * so an idle one costs two fields instead of a pino child and five closures.
 */
class PinoAdapter implements Logger {
  constructor(
    private pino: PinoLogger | undefined,
    // A child's fields and its parent, as two fields rather than one object holding both.
    private readonly fields: Record<string, unknown> | undefined,
    private readonly of: PinoAdapter | undefined,
  ) {}

  private get target(): PinoLogger {
    if (!this.pino) this.pino = this.of!.target.child(this.fields!);
    return this.pino;
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.target.debug(fields ?? {}, msg);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.target.info(fields ?? {}, msg);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.target.warn(fields ?? {}, msg);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.target.error(fields ?? {}, msg);
  }
  child(fields: Record<string, unknown>): Logger {
    return new PinoAdapter(undefined, fields, this);
  }
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
