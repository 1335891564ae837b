import { formatZodIssues } from "@patchbay/protocol";
import { z } from "zod";
import { ANTHROPIC_BASE_URL, anthropic } from "./anthropic";
import type { ModelTimeouts } from "./call-timeouts";
import { defaultEnv, type ModelEnv, readEnv } from "./env";
import { gemini } from "./gemini";
import type { LanguageModel } from "./language-model";
import { ModelError } from "./model-error";
import { OPENAI_BASE_URL, openai } from "./openai";
import { openaiResponses } from "./openai-responses";
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
  /**
   * How long the provider may send nothing before the call ends with a `timeout` error
   * (default 120000, see `DEFAULT_IDLE_TIMEOUT_MS`).
   */
  idle_timeout_ms: z.number().int().positive().optional(),
  /** How long the whole call may take (default 600000, see `DEFAULT_TOTAL_TIMEOUT_MS`). */
  total_timeout_ms: z.number().int().positive().optional(),
  /** Snake-case spelling of `parallelToolCalls`: `false` asks for at most one tool call per reply. */
  parallel_tool_calls: z.boolean().optional(),
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
export const OpenAIModelConfigSchema = z
  .strictObject({
    provider: z.literal("openai"),
    ...common,
    /** Default: the `OPENAI_MODEL` environment variable (see `createModel`). */
    model: z.string().min(1).optional(),
    query: z.record(z.string(), z.string()).optional(),
    organization: z.string().min(1).optional(),
    project: z.string().min(1).optional(),
    azure: z.strictObject({ apiVersion: z.string().min(1) }).optional(),
    strictTools: z.boolean().optional(),
    parallelToolCalls: z.boolean().optional(),
    /**
     * The cap on each reply's tokens (`max_tokens` in YAML), sent as the field `maxTokensField`
     * names (`max_output_tokens` with `api: responses`). Default: none, the provider's own.
     */
    maxTokens: z.number().int().positive().optional(),
    maxTokensField: z.enum(["max_completion_tokens", "max_tokens"]).optional(),
    /** Snake-case spelling of `maxTokensField`. */
    max_tokens_field: z.enum(["max_completion_tokens", "max_tokens"]).optional(),
    /** `false` leaves out `stream_options.include_usage` (servers that answer it with 422). */
    include_usage: z.boolean().optional(),
    /** `responses` calls OpenAI's Responses API (`openaiResponses()`) instead of Chat Completions. */
    api: z.enum(["chat_completions", "responses"]).optional(),
    /** Responses API only: reasoning effort and summary. */
    reasoning: z
      .strictObject({
        effort: z.enum(["minimal", "low", "medium", "high"]).optional(),
        summary: z.enum(["auto", "concise", "detailed"]).optional(),
      })
      .optional(),
  })
  .check(
    oneSpelling("parallelToolCalls", "parallel_tool_calls"),
    oneSpelling("maxTokensField", "max_tokens_field"),
    onlyWithApi(),
  );

// Switches of one API refused with the other, so a setting cannot be silently ignored.
function onlyWithApi() {
  const chatOnly = ["azure", "query", "strictTools", "maxTokensField", "max_tokens_field", "include_usage"];
  return (ctx: { value: Record<string, unknown>; issues: unknown[] }) => {
    const responses = ctx.value.api === "responses";
    for (const key of responses ? chatOnly : ["reasoning"]) {
      if (ctx.value[key] === undefined) continue;
      ctx.issues.push({
        code: "custom",
        input: ctx.value,
        path: [key],
        message: responses ? "applies to Chat Completions, not api: responses" : "needs api: responses",
      });
    }
  };
}

/**
 * The config of an Anthropic model (see `anthropic()` for each option).
 *
 * @example
 * ```ts
 * AnthropicModelConfigSchema.parse({ provider: "anthropic", model: "claude-sonnet-4-5", maxTokens: 2048 });
 * ```
 */
export const AnthropicModelConfigSchema = z
  .strictObject({
    provider: z.literal("anthropic"),
    ...common,
    /** Default: the `ANTHROPIC_MODEL` environment variable (see `createModel`). */
    model: z.string().min(1).optional(),
    maxTokens: z.number().int().positive().optional(),
    anthropicVersion: z.string().min(1).optional(),
    parallelToolCalls: z.boolean().optional(),
    /** Extended thinking with this many tokens of budget (at least 1024, below `maxTokens`). */
    thinking: z.strictObject({ budget_tokens: z.number().int().min(1024) }).optional(),
  })
  .check(oneSpelling("parallelToolCalls", "parallel_tool_calls"));

// A switch with a camelCase and a snake_case spelling may be given one way only.
function oneSpelling(camel: string, snake: string) {
  return (ctx: { value: Record<string, unknown>; issues: unknown[] }) => {
    if (ctx.value[camel] !== undefined && ctx.value[snake] !== undefined) {
      ctx.issues.push({
        code: "custom",
        input: ctx.value,
        path: [snake],
        message: `give either ${camel} or ${snake}, not both`,
      });
    }
  };
}

function timeoutsOf(c: { idle_timeout_ms?: number | undefined; total_timeout_ms?: number | undefined }) {
  const timeouts: ModelTimeouts = {};
  if (c.idle_timeout_ms !== undefined) timeouts.idleMs = c.idle_timeout_ms;
  if (c.total_timeout_ms !== undefined) timeouts.totalMs = c.total_timeout_ms;
  return timeouts;
}

/**
 * The config of a Gemini model behind Google's Gemini API (see `gemini()`).
 *
 * @example
 * ```ts
 * GeminiModelConfigSchema.parse({ provider: "gemini", model: "gemini-2.5-flash", thinking: { budget_tokens: 1024 } });
 * ```
 */
export const GeminiModelConfigSchema = z.strictObject({
  provider: z.literal("gemini"),
  ...common,
  /** `generationConfig.maxOutputTokens`: the cap on each reply's tokens (`max_tokens` in YAML). */
  maxTokens: z.number().int().positive().optional(),
  /**
   * `thinkingConfig`: a token budget (`0` turns thinking off where the model allows it, `-1` lets
   * the model decide) and whether thought summaries stream as reasoning.
   */
  thinking: z
    .strictObject({
      budget_tokens: z.number().int().min(-1).optional(),
      include_thoughts: z.boolean().optional(),
    })
    .optional(),
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
  GeminiModelConfigSchema,
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

/**
 * What the environment fills in of a model config that leaves it out, by provider: the model name
 * and the server, as OpenAI's and Anthropic's own SDKs read them. The config always wins.
 */
const ENV_DEFAULTS = {
  openai: { model: "OPENAI_MODEL", baseURL: "OPENAI_BASE_URL" },
  anthropic: { model: "ANTHROPIC_MODEL", baseURL: "ANTHROPIC_BASE_URL" },
} as const;

function modelName(given: string | undefined, provider: keyof typeof ENV_DEFAULTS, env: ModelEnv): string {
  const variable = ENV_DEFAULTS[provider].model;
  const name = given ?? readEnv(variable, env);
  if (name === undefined) {
    throw new ModelError(
      "bad_request",
      `invalid model config: model: no model name: set model in the config, or the environment variable ${variable}`,
    );
  }
  return name;
}

function baseURLOf(
  given: string | undefined,
  provider: keyof typeof ENV_DEFAULTS,
  env: ModelEnv,
): string | undefined {
  if (given !== undefined) return given;
  const variable = ENV_DEFAULTS[provider].baseURL;
  const url = readEnv(variable, env)?.trim();
  if (url !== undefined && !(/^https?:\/\//i.test(url) && URL.canParse(url))) {
    throw new ModelError("bad_request", `${variable} must be an http(s) URL, got '${url}'`);
  }
  return url;
}

/** `capabilities`, with `images` from `PATCHBAY_MODEL_IMAGES` when the config does not say. */
function capabilitiesOf<T extends { images?: boolean | undefined }>(
  given: T | undefined,
  env: ModelEnv,
): T | undefined {
  if (given?.images !== undefined) return given;
  const images = booleanEnv("PATCHBAY_MODEL_IMAGES", env);
  return images === undefined ? given : ({ ...given, images } as T);
}

function missingKey(variable: string, provider: string): ModelError {
  return new ModelError(
    "authentication",
    `${provider}: no API key: the environment variable ${variable} is not set`,
  );
}

/**
 * Builds the model an agent's config names. The key is read from `env` (default: the process
 * environment): `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, or the variable `apiKeyEnv` names.
 * What the config leaves out, `env` fills in, the config always winning: the model name from
 * `OPENAI_MODEL` / `ANTHROPIC_MODEL`, the server from `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`,
 * and `capabilities.images` (not the scripted model's) from `PATCHBAY_MODEL_IMAGES`. A
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
  const parsedConfig = parsed.data;
  if (parsedConfig.provider === "scripted") return scripted(parsedConfig);
  const capabilities = capabilitiesOf(parsedConfig.capabilities, env);
  const c = {
    ...parsedConfig,
    ...(capabilities === undefined ? {} : { capabilities }),
  } as typeof parsedConfig;
  switch (c.provider) {
    case "openai": {
      const baseURL = baseURLOf(c.baseURL, "openai", env);
      const model = modelName(c.model, "openai", env);
      const variable = c.apiKeyEnv ?? (c.azure ? "AZURE_OPENAI_API_KEY" : "OPENAI_API_KEY");
      const apiKey = readEnv(variable, env);
      const official = baseURL === undefined || baseURL.replace(/\/+$/, "") === OPENAI_BASE_URL;
      if (apiKey === undefined && (official || c.azure !== undefined || c.apiKeyEnv !== undefined)) {
        throw missingKey(variable, "openai");
      }
      const {
        provider: _provider,
        apiKeyEnv: _apiKeyEnv,
        idle_timeout_ms: _idle,
        total_timeout_ms: _total,
        parallel_tool_calls,
        max_tokens_field,
        include_usage,
        api,
        reasoning,
        model: _model,
        baseURL: _baseURL,
        ...rest
      } = c;
      const options = { ...rest, model, ...(baseURL === undefined ? {} : { baseURL }) };
      const parallelToolCalls = options.parallelToolCalls ?? parallel_tool_calls;
      if (api === "responses") {
        return openaiResponses({
          model: options.model,
          ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
          ...(apiKey === undefined ? {} : { apiKey }),
          ...(options.headers === undefined ? {} : { headers: options.headers }),
          ...(options.organization === undefined ? {} : { organization: options.organization }),
          ...(options.project === undefined ? {} : { project: options.project }),
          ...(options.capabilities === undefined ? {} : { capabilities: options.capabilities }),
          ...(options.retry === undefined ? {} : { retry: options.retry }),
          ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }),
          ...(reasoning === undefined ? {} : { reasoning }),
          ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
          timeouts: timeoutsOf(c),
          env: {},
        });
      }
      const maxTokensField = options.maxTokensField ?? max_tokens_field;
      return openai({
        ...options,
        ...(apiKey === undefined ? {} : { apiKey }),
        ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }),
        ...(maxTokensField === undefined ? {} : { maxTokensField }),
        ...(include_usage === undefined ? {} : { includeUsage: include_usage }),
        timeouts: timeoutsOf(c),
        env: {},
      });
    }
    case "anthropic": {
      const baseURL = baseURLOf(c.baseURL, "anthropic", env);
      const model = modelName(c.model, "anthropic", env);
      const variable = c.apiKeyEnv ?? "ANTHROPIC_API_KEY";
      const apiKey = readEnv(variable, env);
      if (apiKey === undefined) throw missingKey(variable, "anthropic");
      const {
        provider: _provider,
        apiKeyEnv: _apiKeyEnv,
        idle_timeout_ms: _idle,
        total_timeout_ms: _total,
        parallel_tool_calls,
        thinking,
        model: _model,
        baseURL: _baseURL,
        ...rest
      } = c;
      const options = { ...rest, model, ...(baseURL === undefined ? {} : { baseURL }) };
      const parallelToolCalls = options.parallelToolCalls ?? parallel_tool_calls;
      if (thinking !== undefined && thinking.budget_tokens >= (options.maxTokens ?? 4096)) {
        throw new ModelError(
          "bad_request",
          `invalid model config: thinking.budget_tokens (${thinking.budget_tokens}) must be below max_tokens (${options.maxTokens ?? 4096}${options.maxTokens === undefined ? ", the default" : ""})`,
        );
      }
      return anthropic({
        ...options,
        apiKey,
        ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }),
        ...(thinking === undefined ? {} : { thinking: { budgetTokens: thinking.budget_tokens } }),
        timeouts: timeoutsOf(c),
      });
    }
    case "gemini": {
      const variable = c.apiKeyEnv ?? "GEMINI_API_KEY";
      const apiKey = readEnv(variable, env);
      if (apiKey === undefined) throw missingKey(variable, "gemini");
      const {
        provider: _provider,
        apiKeyEnv: _apiKeyEnv,
        idle_timeout_ms: _idle,
        total_timeout_ms: _total,
        parallel_tool_calls,
        thinking,
        ...options
      } = c;
      const capabilities = {
        ...options.capabilities,
        ...(parallel_tool_calls === undefined ? {} : { parallelToolCalls: parallel_tool_calls }),
      };
      return gemini({
        ...options,
        apiKey,
        capabilities,
        ...(thinking === undefined
          ? {}
          : {
              thinking: {
                ...(thinking.budget_tokens === undefined ? {} : { budgetTokens: thinking.budget_tokens }),
                ...(thinking.include_thoughts === undefined
                  ? {}
                  : { includeThoughts: thinking.include_thoughts }),
              },
            }),
        timeouts: timeoutsOf(c),
        env: {},
      });
    }
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
  // The variable is checked even when no key is set, so a typo is never silently ignored.
  booleanEnv("PATCHBAY_MODEL_IMAGES", env);
  // createModel reads the rest (model name, server, images), as it does for an agent's config.
  if (readEnv("OPENAI_API_KEY", env) !== undefined) {
    const model = readEnv("OPENAI_MODEL", env) ?? DEFAULT_OPENAI_MODEL;
    return createModel({ provider: "openai", model }, env);
  }
  if (readEnv("ANTHROPIC_API_KEY", env) !== undefined) {
    const model = readEnv("ANTHROPIC_MODEL", env) ?? DEFAULT_ANTHROPIC_MODEL;
    return createModel({ provider: "anthropic", model }, env);
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
    model.provider === "openai"
      ? (baseURLOf(undefined, "openai", env) ?? OPENAI_BASE_URL)
      : (baseURLOf(undefined, "anthropic", env) ?? ANTHROPIC_BASE_URL);
  const images = model.capabilities.images ? "images on" : "images off";
  return `${model.provider} ${model.modelId} at ${base} (${images})`;
}
