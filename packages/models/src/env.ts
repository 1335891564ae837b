/**
 * The environment variables an adapter reads its key from: a plain name-to-value object, like
 * `process.env` on Node or the `env` binding of an edge worker.
 *
 * @example
 * ```ts
 * const env: ModelEnv = { OPENAI_API_KEY: "sk-..." };
 * ```
 */
export type ModelEnv = Record<string, string | undefined>;

/**
 * The process environment where the runtime has one (Node, Bun, Deno's Node compatibility), else
 * an empty object: the package imports nothing Node-only, so at the edge the caller passes `env`.
 *
 * @example
 * ```ts
 * const key = defaultEnv().OPENAI_API_KEY;
 * ```
 */
export function defaultEnv(): ModelEnv {
  const process = (globalThis as { process?: { env?: ModelEnv } }).process;
  return process?.env ?? {};
}

/**
 * One variable from `env` (default: the process environment); empty and blank values count as unset.
 *
 * @example
 * ```ts
 * readEnv("ANTHROPIC_API_KEY", { ANTHROPIC_API_KEY: "sk-ant-..." });
 * ```
 */
export function readEnv(name: string, env: ModelEnv = defaultEnv()): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value;
}
