import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";
import { ServerError } from "../errors";
import { settingHome } from "./cli-options";
import { closest } from "./config-keys";

/**
 * The limits that keep one user from stalling, filling or crashing the server: the size of tool
 * schemas a page declares, quotas per message, connection, user and session, and what a socket
 * may do before it authenticates. Every one has a default a real deployment can live with and
 * can be changed through `createServer({ limits })`, the environment
 * (`PATCHBAY_LIMIT_<NAME>`, e.g. `PATCHBAY_LIMIT_MAX_MESSAGE_BYTES`), the `limits:` map of
 * `<configDir>/patchbay.yaml`, or `patchbay serve --limit name=value`. docs/security.md lists them.
 *
 * @example
 * ```ts
 * const limits: ServerLimits = { ...DEFAULT_SERVER_LIMITS, maxSessionsPerUser: 50 };
 * ```
 */
export interface ServerLimits {
  /** Tools one page may declare for a session (`session.create`, `session.resume`, `tools.update`). */
  maxToolsPerSession: number;
  /** Bytes of one declared tool's `parameters` schema, as JSON. */
  maxSchemaBytes: number;
  /** Nesting depth of a declared schema. */
  maxSchemaDepth: number;
  /** Values of one `enum` in a declared schema. */
  maxEnumValues: number;
  /** Characters of one `pattern` (or `patternProperties` key) in a declared schema. */
  maxPatternLength: number;
  /** Nesting depth of a frame's JSON (objects and arrays); deeper frames get `invalid_frame`. */
  maxJsonDepth: number;
  /** UTF-8 bytes of one message: its text plus its images' data. */
  maxMessageBytes: number;
  /** Sustained bytes per second one authenticated socket may send (bursts up to 8 seconds' worth). */
  connectionBytesPerSecond: number;
  /** Sustained bytes per second all sockets of one user together may send (bursts of 8 s). */
  userBytesPerSecond: number;
  /** Sessions one user may have (an API-key caller is not limited). */
  maxSessionsPerUser: number;
  /** Conversation items one session may hold; a message past it gets `quota_exceeded`. */
  maxConversationItems: number;
  /** Bytes of conversation one session may hold (texts, arguments, results). */
  maxConversationBytes: number;
  /** Conversation items a live session keeps in memory (the model sees this window). */
  liveWindowItems: number;
  /** Largest frame a socket may send before `hello` is accepted. */
  maxPreAuthFrameBytes: number;
  /** Sockets (client and worker) connected but not yet authenticated, in total. */
  maxUnauthenticatedSockets: number;
  /** Sockets not yet authenticated from one remote address. */
  maxUnauthenticatedPerAddress: number;
  /** 1 lets image URLs point at private, loopback and link-local addresses; 0 refuses them. */
  allowPrivateImageUrls: number;
}

/**
 * The defaults of {@link ServerLimits}.
 *
 * @example
 * ```ts
 * DEFAULT_SERVER_LIMITS.maxMessageBytes; // 5 MiB
 * ```
 */
export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxToolsPerSession: 128,
  maxSchemaBytes: 64 * 1024,
  maxSchemaDepth: 32,
  maxEnumValues: 1_000,
  maxPatternLength: 1_000,
  maxJsonDepth: 64,
  maxMessageBytes: 5 * 1024 * 1024,
  // Bursts of 8 s: a page answering a few calls with 5 MB images at once (each result frame up to
  // 8 MiB) must pass; a sustained flood is still cut, and what it can store is bounded by the
  // conversation quotas below.
  connectionBytesPerSecond: 4 * 1024 * 1024,
  userBytesPerSecond: 8 * 1024 * 1024,
  maxSessionsPerUser: 1_000,
  maxConversationItems: 10_000,
  maxConversationBytes: 64 * 1024 * 1024,
  liveWindowItems: 2_000,
  maxPreAuthFrameBytes: 64 * 1024,
  maxUnauthenticatedSockets: 1_024,
  maxUnauthenticatedPerAddress: 64,
  allowPrivateImageUrls: 0,
});

const NAMES = Object.keys(DEFAULT_SERVER_LIMITS) as (keyof ServerLimits)[];
const MINIMUM: Partial<Record<keyof ServerLimits, number>> = { allowPrivateImageUrls: 0 };
const MAXIMUM: Partial<Record<keyof ServerLimits, number>> = { allowPrivateImageUrls: 1 };

/** `maxMessageBytes` → `max-message-bytes` (CLI) and `MAX_MESSAGE_BYTES` (environment). */
export function limitFlagName(name: keyof ServerLimits): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

const ENV_PREFIX = "PATCHBAY_LIMIT_";

function envName(name: keyof ServerLimits): string {
  return `${ENV_PREFIX}${limitFlagName(name).replace(/-/g, "_").toUpperCase()}`;
}

function lookup(raw: string): keyof ServerLimits | undefined {
  const camel = raw.trim().replace(/[-_]([a-z])/g, (_m, c: string) => c.toUpperCase());
  return NAMES.find((name) => name === camel || name.toLowerCase() === raw.trim().toLowerCase());
}

function checked(name: keyof ServerLimits, value: unknown, where: string): number {
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  const min = MINIMUM[name] ?? 1;
  const max = MAXIMUM[name] ?? Number.MAX_SAFE_INTEGER;
  if (typeof number !== "number" || !Number.isInteger(number) || number < min || number > max) {
    throw new ServerError(
      "invalid_config",
      `${where}: limit '${name}' must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
      { path: `limits.${name}` },
    );
  }
  return number;
}

/**
 * Parses `name=value` pairs (as `--limit` takes them) into limits; names in camelCase or
 * kebab-case. An unknown name or a bad value is an `invalid_config` error naming it.
 */
export function parseLimitFlags(pairs: readonly string[]): Partial<ServerLimits> {
  const out: Partial<ServerLimits> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    const name = lookup(at < 0 ? pair : pair.slice(0, at));
    if (!name || at < 0) {
      throw new ServerError(
        "invalid_config",
        `--limit ${pair}: expected name=value with one of ${NAMES.map(limitFlagName).join(", ")}`,
      );
    }
    out[name] = checked(name, pair.slice(at + 1), "--limit");
  }
  return out;
}

/**
 * The limits in force: `given` (code or CLI) over the environment over `<configDir>/patchbay.yaml`
 * over the defaults.
 *
 * @example
 * ```ts
 * const limits = resolveLimits({ maxSessionsPerUser: 10 }, process.env, "./config");
 * ```
 */
export function resolveLimits(
  given: Partial<ServerLimits> | undefined,
  env: Record<string, string | undefined>,
  configDir?: string,
): ServerLimits {
  const limits: ServerLimits = { ...DEFAULT_SERVER_LIMITS };
  const file = configDir === undefined ? undefined : join(configDir, "patchbay.yaml");
  if (file && existsSync(file)) {
    for (const [raw, value] of Object.entries(readConfigFile(file))) {
      const name = lookup(raw);
      if (!name) {
        const suggestion = closest(raw, NAMES);
        throw new ServerError(
          "invalid_config",
          `${file}: limits: unknown limit '${raw}'${suggestion ? ` (did you mean '${suggestion}'?)` : ""}`,
          { path: `limits.${raw}` },
        );
      }
      limits[name] = checked(name, value, file);
    }
  }
  const envNames = NAMES.map(envName);
  for (const [variable, raw] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || envNames.includes(variable)) continue;
    // A misspelt name would otherwise leave its limit at the default without a word.
    const suggestion = closest(
      variable.slice(ENV_PREFIX.length),
      envNames.map((n) => n.slice(ENV_PREFIX.length)),
    );
    throw new ServerError(
      "invalid_config",
      `${variable}=${raw ?? ""}: unknown limit${suggestion ? ` (did you mean ${ENV_PREFIX}${suggestion}?)` : ""}; the names are in docs/security.md`,
      { path: variable },
    );
  }
  for (const name of NAMES) {
    const raw = env[envName(name)];
    if (raw !== undefined && raw !== "") limits[name] = checked(name, raw, envName(name));
  }
  for (const [raw, value] of Object.entries(given ?? {})) {
    const name = lookup(raw);
    if (!name) throw new ServerError("invalid_config", `limits: unknown limit '${raw}'`);
    limits[name] = checked(name, value, "limits");
  }
  return limits;
}

/** The keys `<configDir>/patchbay.yaml` may have at its top level. */
const CONFIG_FILE_KEYS = ["limits"];

/**
 * The `limits:` map of `<configDir>/patchbay.yaml`. A syntax error, a file that is not a map, and
 * a top-level key other than `limits` (a typo, or a setting that belongs to a flag) are
 * `invalid_config` errors naming the file, the line and the column.
 */
function readConfigFile(file: string): Record<string, unknown> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(readFileSync(file, "utf8"), {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: true,
  });
  const at = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return `${file}:${line}:${col}`;
  };
  const error = doc.errors[0];
  if (error) {
    throw new ServerError(
      "invalid_config",
      `${at(error.pos[0])}: YAML syntax error: ${error.message.split("\n")[0] ?? error.message}`,
    );
  }
  if (doc.contents === null) return {};
  if (!isMap(doc.contents)) {
    throw new ServerError("invalid_config", `${at(doc.contents.range?.[0])}: expected a map with limits:`);
  }
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
    if (CONFIG_FILE_KEYS.includes(key)) continue;
    const where = at(isScalar(pair.key) ? pair.key.range?.[0] : undefined);
    const home = settingHome(key);
    const suggestion = closest(key, CONFIG_FILE_KEYS);
    throw new ServerError(
      "invalid_config",
      home
        ? `${where}: '${key}' is not a patchbay.yaml setting: pass ${home}; the file holds only limits:`
        : `${where}: unknown key '${key}'${suggestion ? ` (did you mean '${suggestion}'?)` : ""}; the file holds only limits:`,
      { path: key },
    );
  }
  const fromFile = (doc.toJS() as { limits?: unknown }).limits;
  if (fromFile === undefined || fromFile === null) return {};
  if (typeof fromFile !== "object" || Array.isArray(fromFile)) {
    throw new ServerError("invalid_config", `${file}: 'limits' must be a map of name: value`);
  }
  return fromFile as Record<string, unknown>;
}

/**
 * A quota or limit that was hit: `code` is `quota_exceeded` and `limit` names it (also in the
 * message), so a client can tell which one.
 *
 * @example
 * ```ts
 * throw new QuotaError("maxMessageBytes", "a message may have at most 1048576 bytes");
 * ```
 */
export class QuotaError extends ServerError {
  readonly limit: keyof ServerLimits;
  constructor(limit: keyof ServerLimits, message: string) {
    super("quota_exceeded", `${message} (limit ${limit})`);
    this.name = "QuotaError";
    this.limit = limit;
  }
}

/** Refuses a message over `maxMessageBytes`, or one that would take its session past its quotas. */
export function checkMessageQuotas(
  input: { text: string; images?: readonly ({ data?: string; url?: string } | object)[] },
  conversation: { items: number; bytes: number },
  limits: Pick<ServerLimits, "maxMessageBytes" | "maxConversationItems" | "maxConversationBytes">,
): void {
  let bytes = Buffer.byteLength(input.text);
  for (const image of input.images ?? []) bytes += JSON.stringify(image).length;
  if (bytes > limits.maxMessageBytes) {
    throw new QuotaError(
      "maxMessageBytes",
      `the message has ${bytes} bytes; at most ${limits.maxMessageBytes}`,
    );
  }
  if (conversation.items >= limits.maxConversationItems) {
    throw new QuotaError(
      "maxConversationItems",
      `the session holds ${conversation.items} conversation items; at most ${limits.maxConversationItems}`,
    );
  }
  if (conversation.bytes + bytes > limits.maxConversationBytes) {
    throw new QuotaError(
      "maxConversationBytes",
      `the session holds ${conversation.bytes} bytes of conversation; at most ${limits.maxConversationBytes}`,
    );
  }
}
