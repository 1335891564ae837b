import { randomBytes } from "node:crypto";
import { ServerError } from "../errors";

/** The shortest secret production accepts: user tokens are HMAC-signed with it. */
export const MIN_SECRET_BYTES = 32;

/**
 * How strict the server is about its setup. `production` refuses a missing API key or secret, a
 * secret under {@link MIN_SECRET_BYTES} bytes and a missing place for data; `development` makes
 * up the credentials (printed once), keeps sessions in memory when no place for data is given,
 * and only warns about a short secret.
 *
 * @example
 * ```ts
 * const mode: ServerMode = process.env.NODE_ENV === "production" ? "production" : "development";
 * ```
 */
export type ServerMode = "development" | "production";

/** The mode an option names, else `PATCHBAY_MODE`, else `production` when `NODE_ENV` says so, else development. */
export function serverMode(
  option: ServerMode | undefined,
  env: Record<string, string | undefined>,
): ServerMode {
  const named = option ?? env.PATCHBAY_MODE;
  if (named === undefined || named === "")
    return env.NODE_ENV === "production" ? "production" : "development";
  if (named !== "development" && named !== "production") {
    throw new ServerError(
      "invalid_config",
      `createServer: mode: must be "development" or "production" (option or PATCHBAY_MODE); got ${JSON.stringify(named)}`,
      { path: "mode" },
    );
  }
  return named;
}

/** The server's API key and secret, and whether they were made up on this start. */
export interface ResolvedCredentials {
  apiKey: string;
  secret: string;
  generated: boolean;
}

/**
 * The API key and secret from the options or `PATCHBAY_API_KEY` / `PATCHBAY_API_SECRET`. In
 * development the missing ones are made up and a short secret is only `warn`ed about; in
 * production either is an `invalid_config` error naming the field.
 */
export function resolveServerCredentials(
  given: { apiKey?: string | undefined; secret?: string | undefined },
  env: Record<string, string | undefined>,
  mode: ServerMode,
  warn: (message: string) => void,
): ResolvedCredentials {
  let apiKey = given.apiKey ?? env.PATCHBAY_API_KEY;
  let secret = given.secret ?? env.PATCHBAY_API_SECRET;
  if (mode === "production" && (!apiKey || !secret)) {
    const missing = [
      ...(apiKey ? [] : ["apiKey (or PATCHBAY_API_KEY)"]),
      ...(secret ? [] : ["secret (or PATCHBAY_API_SECRET)"]),
    ];
    throw new ServerError(
      "invalid_config",
      `createServer: missing ${missing.join(" and ")}; production needs both (in development, mode: "development", they are made up)`,
      { path: apiKey ? "secret" : "apiKey" },
    );
  }
  const generated = !apiKey || !secret;
  apiKey ||= `pk_dev_${randomBytes(6).toString("hex")}`;
  secret ||= randomBytes(MIN_SECRET_BYTES).toString("hex");
  const bytes = Buffer.byteLength(secret, "utf8");
  if (bytes < MIN_SECRET_BYTES) {
    const why = `the secret is ${bytes} bytes; production needs at least ${MIN_SECRET_BYTES} (\`openssl rand -hex 32\` makes one)`;
    if (mode === "production")
      throw new ServerError("invalid_config", `createServer: secret: ${why}`, { path: "secret" });
    warn(`${why}: fine in development, refused in production`);
  }
  return { apiKey, secret, generated };
}
