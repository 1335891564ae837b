#!/usr/bin/env node
import { parseArgs } from "node:util";
import { parseCorsOrigins } from "./cors";
import { createServer } from "./create-server";
import { ServerError } from "./errors";
import { createLogger, LOG_LEVELS, type LogLevel } from "./logger";
import { createUserToken } from "./user-token";

const HELP = `patchbay: the self-hosted Patchbay agent service

Usage:
  patchbay serve [options]       run the server
  patchbay token <userId>        print a user token signed with the secret (for development)
  patchbay --help | --version

Options (each also read from the environment variable shown):
  --port <n>            PATCHBAY_PORT          port to listen on (default 8787; 0 picks one)
  --host <addr>         PATCHBAY_HOST          interface to bind (default 127.0.0.1)
  --data-dir <dir>      PATCHBAY_DATA_DIR      where the SQLite store lives (default ./patchbay-data)
  --database-url <url>  PATCHBAY_DATABASE_URL  keep sessions in PostgreSQL instead (postgres://...)
  --config-dir <dir>    PATCHBAY_CONFIG_DIR    holds agents/<name>.yaml (default .)
  --log-level <level>   PATCHBAY_LOG_LEVEL     debug, info, warn, error or silent (default info)
  --api-key <key>       PATCHBAY_API_KEY       the API key backends and workers send
  --api-secret <secret> PATCHBAY_API_SECRET    the secret (prefer the environment: flags show in ps)
  --shutdown-grace-ms <n> PATCHBAY_SHUTDOWN_GRACE_MS  how long SIGTERM waits for running turns (default 10000)
  --cors-origins <list> PATCHBAY_CORS_ORIGINS  origins whose pages may call the server, comma-separated, or *
                                               (default none: same-origin pages only)
  --expires-in <time>   (token) lifetime, e.g. 15m or 3600 (seconds); default 1h
`;

/** Exit codes: 0 ok, 1 runtime failure, 2 bad usage or configuration. */
async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "data-dir": { type: "string" },
      "database-url": { type: "string" },
      "config-dir": { type: "string" },
      "log-level": { type: "string" },
      "api-key": { type: "string" },
      "api-secret": { type: "string" },
      "shutdown-grace-ms": { type: "string" },
      "cors-origins": { type: "string" },
      "expires-in": { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
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
    const expiresIn = values["expires-in"] ?? "1h";
    process.stdout.write(
      `${await createUserToken(secret, rest[0], { expiresIn: /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn })}\n`,
    );
    return 0;
  }
  if (command !== "serve") throw usage(command ? `unknown command '${command}'` : "no command given");

  const level = (values["log-level"] ?? env.PATCHBAY_LOG_LEVEL ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(level)) throw usage(`--log-level must be one of ${LOG_LEVELS.join(", ")}`);
  const logger = createLogger({ level });
  const apiKey = values["api-key"] ?? env.PATCHBAY_API_KEY;
  const secret = values["api-secret"] ?? env.PATCHBAY_API_SECRET;
  const corsOrigins = values["cors-origins"] ?? env.PATCHBAY_CORS_ORIGINS;
  const databaseUrl = values["database-url"] ?? env.PATCHBAY_DATABASE_URL;
  const server = await createServer({
    port: integer("--port", values.port ?? env.PATCHBAY_PORT ?? "8787", 0, 65_535),
    host: values.host ?? env.PATCHBAY_HOST ?? "127.0.0.1",
    dataDir: values["data-dir"] ?? env.PATCHBAY_DATA_DIR ?? "./patchbay-data",
    ...(databaseUrl ? { databaseUrl } : {}),
    configDir: values["config-dir"] ?? env.PATCHBAY_CONFIG_DIR ?? ".",
    shutdownGraceMs: integer(
      "--shutdown-grace-ms",
      values["shutdown-grace-ms"] ?? env.PATCHBAY_SHUTDOWN_GRACE_MS ?? "10000",
      0,
      600_000,
    ),
    logger,
    processMetrics: true,
    ...(corsOrigins ? { cors: parseCorsOrigins(corsOrigins) } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(secret ? { secret } : {}),
  });
  if (server.agents.size === 0) {
    logger.warn("no agents configured: add agents/<name>.yaml under the config directory");
  }
  // Tools and scripts read the address from stdout; logs go to stderr.
  process.stdout.write(`patchbay listening on ${server.url}\n`);

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

function usage(message: string): ServerError {
  return new ServerError("usage", `${message}\n\n${HELP}`);
}

function integer(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw usage(`${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return value;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ServerError) {
      process.stderr.write(`patchbay: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`patchbay: ${error.message}\n\n${HELP}`);
      process.exit(2);
    }
    process.stderr.write(`patchbay: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
