import { formatZodIssues } from "@patchbay/protocol";
import { z } from "zod";
import { ANTHROPIC_BASE_URL, anthropic } from "./anthropic";
import { defaultEnv, type ModelEnv, readEnv } from "./env";
import type { LanguageModel } from "./language-model";
import { ModelError } from "./model-error";
import { OPENAI_BASE_URL, openai } from "./openai";
import { scripted } from "./scripted";
import { ScriptedModelConfigSchema } from "./scripted-config";

const CapabilitiesSchema = z.strictObject({
  images: z.boolean().optional(),
  parallelToolCalls: z.boolean().optional(),
});

const RetrySchema = z.strictObject({
  maxRetries: z.number().int().min(0).max(10).optional(),
  initialDelayMs: z.number().int().min(0).optional(),
  maxDelayMs: z.number().int().min(0).optional(),
  maxRetryAfterMs: z.number().int().min(0).optional(),
});

const common = {
  model: z.string().min(1),
  baseURL: z.url().optional(),
  /** The environment variable the key is read from. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
    .optional(),
  headers: z.record(z.string(), z.string()).optional(),
  capabilities: CapabilitiesSchema.optional(),
  retry: RetrySchema.optional(),
};

/**
 * The config of an OpenAI-compatible model (see `openai()` for each option).
 *
 * @example
 * ```ts
 * OpenAIModelConfigSchema.parse({ provider: "openai", model: "llama3.1", baseURL: "http://localhost:11434/v1" });
 * ```
 */
export const OpenAIModelConfigSchema = z.strictObject({
  provider: z.literal("openai"),
  ...common,
  query: z.record(z.string(), z.string()).optional(),
  organization: z.string().min(1).optional(),
  project: z.string().min(1).optional(),
  azure: z.strictObject({ apiVersion: z.string().min(1) }).optional(),
  strictTools: z.boolean().optional(),
  parallelToolCalls: z.boolean().optional(),
  maxTokensField: z.enum(["max_completion_tokens", "max_tokens"]).optional(),
});

/**
 * The config of an Anthropic model (see `anthropic()` for each option).
 *
 * @example
 * ```ts
 * AnthropicModelConfigSchema.parse({ provider: "anthropic", model: "claude-sonnet-4-5", maxTokens: 2048 });
 * ```
 */
export const AnthropicModelConfigSchema = z.strictObject({
  provider: z.literal("anthropic"),
  ...common,
  maxTokens: z.number().int().positive().optional(),
  anthropicVersion: z.string().min(1).optional(),
  parallelToolCalls: z.boolean().optional(),
});

/**
 * The `model:` block of an agent's config: which provider, which model, where, and the key's
 * environment variable. The server's config loader validates agent files with it.
 *
 * @example
 * ```ts
 * const config = ModelConfigSchema.parse({ provider: "openai", model: "gpt-4o-mini" });
 * const model = createModel(config);
 * ```
 */
export const ModelConfigSchema = z.discriminatedUnion("provider", [
  OpenAIModelConfigSchema,
  AnthropicModelConfigSchema,
  ScriptedModelConfigSchema.extend({ provider: z.literal("scripted") }),
]);

/**
 * A model config as written (defaults not yet applied).
 *
 * @example
 * ```ts
 * const config: ModelConfig = { provider: "anthropic", model: "claude-sonnet-4-5" };
 * ```
 */
export type ModelConfig = z.input<typeof ModelConfigSchema>;

/**
 * The model `defaultModelFromEnv` picks for OpenAI when `OPENAI_MODEL` is not set.
 *
 * @example
 * ```ts
 * createModel({ provider: "openai", model: DEFAULT_OPENAI_MODEL });
 * ```
 */
export const DEFAULT_OPENAI_MODEL = "gpt-4o-mini";
/**
 * The model `defaultModelFromEnv` picks for Anthropic when `ANTHROPIC_MODEL` is not set.
 *
 * @example
 * ```ts
 * createModel({ provider: "anthropic", model: DEFAULT_ANTHROPIC_MODEL });
 * ```
 */
export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5";

function missingKey(variable: string, provider: string): ModelError {
  return new ModelError(
    "authentication",
    `${provider}: no API key: the environment variable ${variable} is not set`,
  );
}

/**
 * Builds the model an agent's config names. The key is read from `env` (default: the process
 * environment): `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, or the variable `apiKeyEnv` names. A
 * missing key is a `ModelError` with code `authentication` that names the variable, except for
 * an OpenAI-compatible server at a custom `baseURL` with no `apiKeyEnv` (local servers need no
 * key). An invalid config is a `ModelError` with code `bad_request` listing every problem.
 *
 * @example
 * ```ts
 * const model = createModel({ provider: "openai", model: "gpt-4o-mini" }, { OPENAI_API_KEY: "sk-..." });
 * const offline = createModel({ provider: "scripted", rules: [{ match: "^hi", reply: "Hello!" }] });
 * ```
 */
export function createModel(config: ModelConfig, env: ModelEnv = defaultEnv()): LanguageModel {
  const parsed = ModelConfigSchema.safeParse(config);
  if (!parsed.success) {
    throw new ModelError("bad_request", `invalid model config: ${formatZodIssues(parsed.error).join("; ")}`);
  }
  const c = parsed.data;
  switch (c.provider) {
    case "openai": {
      const variable = c.apiKeyEnv ?? (c.azure ? "AZURE_OPENAI_API_KEY" : "OPENAI_API_KEY");
      const apiKey = readEnv(variable, env);
      const official = c.baseURL === undefined || c.baseURL.replace(/\/+$/, "") === OPENAI_BASE_URL;
      if (apiKey === undefined && (official || c.azure !== undefined || c.apiKeyEnv !== undefined)) {
        throw missingKey(variable, "openai");
      }
      const { provider: _provider, apiKeyEnv: _apiKeyEnv, ...options } = c;
      return openai({ ...options, ...(apiKey === undefined ? {} : { apiKey }), env: {} });
    }
    case "anthropic": {
      const variable = c.apiKeyEnv ?? "ANTHROPIC_API_KEY";
      const apiKey = readEnv(variable, env);
      if (apiKey === undefined) throw missingKey(variable, "anthropic");
      const { provider: _provider, apiKeyEnv: _apiKeyEnv, ...options } = c;
      return anthropic({ ...options, apiKey });
    }
    case "scripted":
      return scripted(c);
  }
}

/**
 * The model to use when the project names none: OpenAI when `OPENAI_API_KEY` is set (model from
 * `OPENAI_MODEL`, server from `OPENAI_BASE_URL`), else Anthropic when `ANTHROPIC_API_KEY` is set
 * (model from `ANTHROPIC_MODEL`), else the scripted stand-in, so everything runs with no key.
 * `PATCHBAY_MODEL_IMAGES=true|false` says whether the model takes images in tool results (by
 * default off for an OpenAI-compatible server at a custom `OPENAI_BASE_URL`, on otherwise).
 *
 * @example
 * ```ts
 * const model = defaultModelFromEnv(process.env);
 * console.log(model.provider); // "scripted" on a machine without keys
 * ```
 */
export function defaultModelFromEnv(env: ModelEnv = defaultEnv()): LanguageModel {
  const images = booleanEnv("PATCHBAY_MODEL_IMAGES", env);
  const capabilities = images === undefined ? {} : { capabilities: { images } };
  if (readEnv("OPENAI_API_KEY", env) !== undefined) {
    const baseURL = readEnv("OPENAI_BASE_URL", env);
    return createModel(
      {
        provider: "openai",
        model: readEnv("OPENAI_MODEL", env) ?? DEFAULT_OPENAI_MODEL,
        ...(baseURL === undefined ? {} : { baseURL }),
        ...capabilities,
      },
      env,
    );
  }
  if (readEnv("ANTHROPIC_API_KEY", env) !== undefined) {
    return createModel(
      {
        provider: "anthropic",
        model: readEnv("ANTHROPIC_MODEL", env) ?? DEFAULT_ANTHROPIC_MODEL,
        ...capabilities,
      },
      env,
    );
  }
  return scripted();
}

/** `true`/`1` or `false`/`0`; anything else is refused with the variable's name. */
function booleanEnv(name: string, env: ModelEnv): boolean | undefined {
  const raw = readEnv(name, env)?.trim().toLowerCase();
  if (raw === undefined) return undefined;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ModelError("bad_request", `${name} must be true or false, got '${readEnv(name, env)}'`);
}

/**
 * Where {@link defaultModelFromEnv} will send requests, for a startup line: `"openai gpt-4o-mini
 * at http://127.0.0.1:11434/v1"`, `"anthropic claude-sonnet-4-5 at https://api.anthropic.com"`,
 * or undefined when no key is set (the scripted model).
 *
 * @example
 * ```ts
 * console.log(`model: ${describeModelFromEnv(process.env) ?? "scripted"}`);
 * ```
 */
export function describeModelFromEnv(env: ModelEnv = defaultEnv()): string | undefined {
  const model =
    readEnv("OPENAI_API_KEY", env) !== undefined || readEnv("ANTHROPIC_API_KEY", env) !== undefined
      ? defaultModelFromEnv(env)
      : undefined;
  if (model === undefined) return undefined;
  const base =
    model.provider === "openai" ? (readEnv("OPENAI_BASE_URL", env) ?? OPENAI_BASE_URL) : ANTHROPIC_BASE_URL;
  const images = model.capabilities.images ? "images on" : "images off";
  return `${model.provider} ${model.modelId} at ${base} (${images})`;
}
