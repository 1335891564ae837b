/**
 * The options of the `patchbay` command, one list for the CLI's parser, its "did you mean", the
 * errors that say where a setting goes (a `port:` in patchbay.yaml) and the test that keeps the
 * docs' flag tables complete. `env` is the variable read when the flag is not given.
 */
export const CLI_OPTIONS = {
  dev: { type: "boolean" },
  port: { type: "string", env: "PATCHBAY_PORT" },
  host: { type: "string", env: "PATCHBAY_HOST" },
  "data-dir": { type: "string", env: "PATCHBAY_DATA_DIR" },
  "database-url": { type: "string", env: "PATCHBAY_DATABASE_URL" },
  "nats-url": { type: "string", env: "PATCHBAY_NATS_URL" },
  "lease-ttl-ms": { type: "string", env: "PATCHBAY_LEASE_TTL_MS" },
  "cluster-port": { type: "string", env: "PATCHBAY_CLUSTER_PORT" },
  "advertise-host": { type: "string", env: "PATCHBAY_CLUSTER_ADVERTISE_HOST" },
  "config-dir": { type: "string", env: "PATCHBAY_CONFIG_DIR" },
  "log-level": { type: "string", env: "PATCHBAY_LOG_LEVEL" },
  "api-key": { type: "string", env: "PATCHBAY_API_KEY" },
  "api-secret": { type: "string", env: "PATCHBAY_API_SECRET" },
  "shutdown-grace-ms": { type: "string", env: "PATCHBAY_SHUTDOWN_GRACE_MS" },
  "cors-origins": { type: "string", env: "PATCHBAY_CORS_ORIGINS" },
  limit: { type: "string", multiple: true, env: "PATCHBAY_LIMIT_<NAME>" },
  "expires-in": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const satisfies Record<
  string,
  { type: "string" | "boolean"; env?: string; multiple?: boolean; short?: string }
>;

export type CliOptionName = keyof typeof CLI_OPTIONS;

/** `parseArgs`' options: {@link CLI_OPTIONS} without the environment names. */
export function parseArgsOptions(): { [K in CliOptionName]: Omit<(typeof CLI_OPTIONS)[K], "env"> } {
  return Object.fromEntries(
    Object.entries(CLI_OPTIONS as Record<string, { env?: string }>).map(
      ([name, { env: _env, ...option }]) => [name, option],
    ),
  ) as never;
}

/**
 * Where a server setting written under the wrong name or in the wrong place goes: `port`,
 * `data_dir` or `dataDir` -> `--port (or PATCHBAY_PORT)`; undefined for anything else.
 */
export function settingHome(key: string): string | undefined {
  const flag = key
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replaceAll("_", "-")
    .toLowerCase();
  const option = (CLI_OPTIONS as Record<string, { env?: string }>)[flag];
  if (option === undefined || ["help", "version", "expires-in", "limit"].includes(flag)) return undefined;
  return `--${flag}${option.env ? ` (or ${option.env})` : ""}`;
}
