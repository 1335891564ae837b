#!/usr/bin/env node
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import { createUserToken } from "./auth/user-token";
import type { ClusterOptions } from "./cluster/cluster-options";
import { CLI_OPTIONS, parseArgsOptions } from "./config/cli-options";
import { closest } from "./config/config-keys";
import { parseLimitFlags } from "./config/limits";
import { MIN_SECRET_BYTES } from "./config/server-credentials";
import { createServer } from "./create-server";
import { ServerError } from "./errors";
import { parseCorsOrigins } from "./http/cors";
import { createLogger, LOG_LEVELS, type LogLevel } from "./observability/logger";
import { redactUrl } from "./store/postgres-store";

const HELP = `patchbay: the self-hosted Patchbay agent service

Usage:
  patchbay serve [options]       run the server
  patchbay token <userId>        print a user token signed with the secret (for development)
  patchbay --help | --version

Options (each also read from the environment variable shown):
  --dev                                        development: makes up an API key and a secret when
                                               none is set and prints them; allows short secrets
  --port <n>            PATCHBAY_PORT          port to listen on (default 8787; 0 picks one)
  --host <addr>         PATCHBAY_HOST          interface to bind (default 127.0.0.1)
  --data-dir <dir>      PATCHBAY_DATA_DIR      where the SQLite store lives (default ./patchbay-data)
  --database-url <url>  PATCHBAY_DATABASE_URL  keep sessions in PostgreSQL instead (postgres://...)
  --nats-url <url>      PATCHBAY_NATS_URL      run as one node of a cluster sharing the Postgres above,
                                               over this NATS server (nats://...; docs/cluster.md)
  --lease-ttl-ms <n>    PATCHBAY_LEASE_TTL_MS  cluster: how long a session's lease outlives its node
                                               (default 15000; takeover within this plus a third)
  --cluster-port <n>    PATCHBAY_CLUSTER_PORT  cluster: the port other nodes open direct links to for hosted
                                               calls (default 0: a free one; "off": everything over NATS)
  --advertise-host <h>  PATCHBAY_CLUSTER_ADVERTISE_HOST  cluster: the address other nodes reach that port on
                                               (default --host; needed when --host is 0.0.0.0)
  --config-dir <dir>    PATCHBAY_CONFIG_DIR    holds agents/<name>.yaml (default .)
  --log-level <level>   PATCHBAY_LOG_LEVEL     debug, info, warn, error or silent (default info)
  --api-key <key>       PATCHBAY_API_KEY       the API key backends and workers send
  --api-secret <secret> PATCHBAY_API_SECRET    the secret, at least 32 bytes (prefer the environment:
                                               flags show in ps); \`openssl rand -hex 32\` makes one
  --shutdown-grace-ms <n> PATCHBAY_SHUTDOWN_GRACE_MS  how long SIGTERM waits for running turns (default 10000)
  --cors-origins <list> PATCHBAY_CORS_ORIGINS  origins whose pages may call the server, comma-separated, or *
                                               (default none: same-origin pages only)
  --limit <name=value>  PATCHBAY_LIMIT_<NAME>  a quota or limit, repeatable, e.g. --limit max-sessions-per-user=50
                                               (also limits: in <config-dir>/patchbay.yaml; see docs/security.md)
  --expires-in <time>   (token) lifetime: seconds (3600) or a number and s, m, h, d, w or y (15m); default 1h

Model variables (an agent's model: section wins; these fill in what it leaves out; docs/models.md):
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY  the provider's key (unless api_key_env names another)
  OPENAI_MODEL, ANTHROPIC_MODEL                      the model name, when the agent gives no model:
  OPENAI_BASE_URL, ANTHROPIC_BASE_URL                the server, when the agent gives no base_url:
  PATCHBAY_MODEL_IMAGES=true|false                   whether the model takes images in tool results,
                                                     when the agent gives no capabilities.images

Exit codes: 0 after a clean shutdown, 1 a failure while running, 2 bad usage or configuration,
  3 the database (--database-url) could not be opened at start: unreachable, refused the login,
  or missing
`;

export { MIN_SECRET_BYTES } from "./config/server-credentials";

const FLAGS = Object.keys(CLI_OPTIONS);

/** Exit codes (the help lists them): 0 ok, 1 runtime failure, 2 bad usage or configuration, 3 the database could not be opened. */
const EXIT_DATABASE = 3;

/** A startup failure that is one line and its own exit code (not a usage error). */
class CliFailure extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: withNegativeValues(argv),
    allowPositionals: true,
    strict: true,
    options: parseArgsOptions(),
  });
  const env = process.env;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const [command, ...rest] = positionals;
  if (command === "token") {
    const secret = values["api-secret"] ?? env.PATCHBAY_API_SECRET;
    if (!rest[0] || !secret) throw usage("token needs a user id and the secret (PATCHBAY_API_SECRET)");
    // The token must verify on the server it is for, which refuses a short secret the same way.
    checkSecretLength(secret, values.dev === true);
    const expiresIn = lifetime(values["expires-in"] ?? "1h");
    process.stdout.write(`${await createUserToken(secret, rest[0], { expiresIn })}\n`);
    return 0;
  }
  if (command !== "serve") throw usage(command ? `unknown command '${command}'` : "no command given");

  const level = (values["log-level"] ?? env.PATCHBAY_LOG_LEVEL ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(level)) throw usage(`--log-level must be one of ${LOG_LEVELS.join(", ")}`);
  const logger = createLogger({ level });
  const dev = values.dev === true;
  let apiKey = values["api-key"] ?? env.PATCHBAY_API_KEY;
  let secret = values["api-secret"] ?? env.PATCHBAY_API_SECRET;
  const made: string[] = [];
  if (dev && !apiKey) {
    apiKey = `pk_dev_${randomBytes(6).toString("hex")}`;
    made.push(`PATCHBAY_API_KEY=${apiKey}`);
  }
  if (dev && !secret) {
    secret = randomBytes(MIN_SECRET_BYTES).toString("hex");
    made.push(`PATCHBAY_API_SECRET=${secret}`);
  }
  const missing = [
    ...(apiKey ? [] : ["--api-key (or PATCHBAY_API_KEY)"]),
    ...(secret ? [] : ["--api-secret (or PATCHBAY_API_SECRET)"]),
  ];
  if (missing.length > 0) {
    throw usage(`missing ${missing.join(" and ")}; for development, --dev makes them up`);
  }
  checkSecretLength(secret!, dev);
  const corsOrigins = values["cors-origins"] ?? env.PATCHBAY_CORS_ORIGINS;
  const databaseUrl = values["database-url"] ?? env.PATCHBAY_DATABASE_URL;
  const natsUrl = values["nats-url"] ?? env.PATCHBAY_NATS_URL;
  const leaseTtl = values["lease-ttl-ms"] ?? env.PATCHBAY_LEASE_TTL_MS;
  const port = integer("--port", values.port ?? env.PATCHBAY_PORT ?? "8787", 0, 65_535);
  // The environment's PATCHBAY_CLUSTER_PORT and PATCHBAY_CLUSTER_ADVERTISE_HOST are read where cluster mode starts.
  const clusterPort = values["cluster-port"];
  const advertiseHost = values["advertise-host"];
  const direct: ClusterOptions["direct"] =
    clusterPort === "off"
      ? false
      : clusterPort || advertiseHost
        ? {
            ...(clusterPort ? { port: integer("--cluster-port", clusterPort, 0, 65_535) } : {}),
            ...(advertiseHost ? { advertiseHost } : {}),
          }
        : undefined;
  const cluster = natsUrl
    ? {
        ...(leaseTtl ? { leaseTtlMs: integer("--lease-ttl-ms", leaseTtl, 300, 600_000) } : {}),
        ...(direct !== undefined ? { direct } : {}),
      }
    : {};
  const host = values.host ?? env.PATCHBAY_HOST ?? "127.0.0.1";
  const configDir = values["config-dir"] ?? env.PATCHBAY_CONFIG_DIR;
  if (configDir !== undefined) checkConfigDir(configDir, values["config-dir"] !== undefined);
  const server = await createServer({
    port,
    host,
    dataDir: values["data-dir"] ?? env.PATCHBAY_DATA_DIR ?? "./patchbay-data",
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(natsUrl ? { natsUrl } : {}),
    ...(Object.keys(cluster).length > 0 ? { cluster } : {}),
    configDir: configDir ?? ".",
    shutdownGraceMs: integer(
      "--shutdown-grace-ms",
      values["shutdown-grace-ms"] ?? env.PATCHBAY_SHUTDOWN_GRACE_MS ?? "10000",
      0,
      600_000,
    ),
    logger,
    mode: dev ? "development" : "production",
    processMetrics: true,
    limits: parseLimitFlags(values.limit ?? []),
    ...(corsOrigins ? { cors: parseCorsOrigins(corsOrigins) } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(secret ? { secret } : {}),
  }).catch((error: unknown) => {
    throw startupFailure(error, { host, databaseUrl });
  });
  if (server.agents.size === 0) {
    logger.warn("no agents configured: add agents/<name>.yaml under the config directory");
  }
  // Tools and scripts read the address from stdout; logs go to stderr.
  process.stdout.write(`patchbay listening on ${server.url}\n`);
  if (made.length > 0) {
    process.stdout.write(
      `development credentials (new on every start; set them to keep them):\n${made.map((line) => `  ${line}\n`).join("")}`,
    );
  }

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn("second signal: exiting now", { signal });
        resolve(1);
        return;
      }
      stopping = true;
      logger.info("shutting down", { signal });
      server.close().then(
        () => resolve(0),
        (error) => {
          logger.error("shutdown failed", { error });
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}

const VERSION = "0.1.0";

/** A usage error is one line plus where to look, not the whole help. */
function usage(message: string): ServerError {
  return new ServerError("usage", `${message}\n(patchbay --help lists the options)`);
}

/**
 * The secret check of `serve`, also for `token`: a token signed with a short secret would only be
 * refused by the production server it is for. Said with the flag that lifts it; createServer
 * refuses it too (production), or warns (--dev).
 */
function checkSecretLength(secret: string, dev: boolean): void {
  const bytes = Buffer.byteLength(secret, "utf8");
  if (bytes < MIN_SECRET_BYTES && !dev) {
    throw usage(
      `the secret is ${bytes} bytes; production needs at least ${MIN_SECRET_BYTES} (\`openssl rand -hex 32\` makes one), or pass --dev`,
    );
  }
}

/** `--expires-in`: whole seconds, or a number and a unit (jose's spelling of a time span). */
function lifetime(raw: string): number | string {
  if (/^\d+$/.test(raw) && Number(raw) > 0) return Number(raw);
  const units = "s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?|y|yrs?|years?";
  if (new RegExp(`^[1-9]\\d*\\s?(${units})$`, "i").test(raw)) return raw;
  throw usage(
    `--expires-in must be whole seconds (3600) or a number and a unit, s, m, h, d, w or y (15m, 12h, 7d); got '${raw}'`,
  );
}

/** A config directory that was asked for must be there: a typo would start a server with no agents. */
function checkConfigDir(dir: string, fromFlag: boolean): void {
  const name = fromFlag ? "--config-dir" : "PATCHBAY_CONFIG_DIR";
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    throw usage(`${name} ${dir}: no such directory (it holds agents/<name>.yaml and patchbay.yaml)`);
  }
  if (!isDirectory) throw usage(`${name} ${dir}: not a directory`);
}

/**
 * Lets a string option take a negative number as its value (`--shutdown-grace-ms -5`), which
 * parseArgs reads as an unknown option, so the value's range check answers instead.
 */
function withNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    const option = (CLI_OPTIONS as Record<string, { type: string }>)[arg.slice(2)];
    if (arg.startsWith("--") && option?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/**
 * A failed start said in one line where the cause is known: the database (masked URL, exit 3) or
 * an address --host cannot bind (exit 2). Anything else goes on unchanged.
 */
function startupFailure(
  error: unknown,
  settings: { host: string; databaseUrl: string | undefined },
): unknown {
  if (error instanceof ServerError || !(error instanceof Error)) return error;
  const { code, syscall, hostname } = error as NodeJS.ErrnoException & { hostname?: string };
  if (settings.databaseUrl !== undefined) {
    const where = redactUrl(settings.databaseUrl);
    if (error.message.includes(where)) {
      const said = error.message.replace(`${where}: `, "").split("\n")[0]?.trim();
      const cause =
        said || (error as { errors?: Error[] }).errors?.[0]?.message || code || error.constructor.name;
      return new CliFailure(
        `cannot open the database ${where} (--database-url or PATCHBAY_DATABASE_URL): ${cause}`,
        EXIT_DATABASE,
      );
    }
  }
  const resolving = syscall === "getaddrinfo" && hostname === settings.host;
  if (resolving || (syscall === "listen" && (code === "EADDRNOTAVAIL" || code === "EINVAL"))) {
    return usage(
      `--host ${settings.host} (or PATCHBAY_HOST): ${resolving ? "no such address or host name" : "not an address of this machine"} (${code}); pass one of its addresses, e.g. 127.0.0.1, or 0.0.0.0 for all`,
    );
  }
  return error;
}

function integer(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw usage(`${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return value;
}

/** Node's parseArgs text, with "did you mean" for a misspelt flag. */
function parseArgsMessage(error: TypeError): string {
  const code = (error as { code?: string }).code;
  const flag = /'(--?[^'\s]+)'/.exec(error.message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && flag) {
    const name = flag.replace(/^-+/, "").split("=")[0] ?? "";
    const suggestion = closest(
      name.replaceAll("-", "_"),
      FLAGS.map((f) => f.replaceAll("-", "_")),
    );
    return `unknown option '${flag}'${suggestion ? ` (did you mean --${suggestion.replaceAll("_", "-")}?)` : ""}`;
  }
  return error.message.split("\n")[0] ?? error.message;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ServerError) {
      process.stderr.write(`patchbay: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof CliFailure) {
      process.stderr.write(`patchbay: ${error.message}\n`);
      process.exit(error.exitCode);
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`patchbay: ${parseArgsMessage(error)}\n(patchbay --help lists the options)\n`);
      process.exit(2);
    }
    const port = (error as { code?: string; port?: number }).code === "EADDRINUSE";
    if (port) {
      const taken = (error as { port?: number }).port;
      process.stderr.write(
        `patchbay: port ${taken} is already in use on this machine: pass --port <n> (or PATCHBAY_PORT) for another one, or --port 0 for any free port\n`,
      );
      process.exit(2);
    }
    process.stderr.write(`patchbay: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
