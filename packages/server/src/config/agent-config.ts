import { readdirSync, readFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { ConnectorEntriesSchema, type ConnectorEntry } from "@patchbay/connectors";
import { type ModelConfig, ModelConfigSchema } from "@patchbay/models";
import { issuePath } from "@patchbay/protocol";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { ServerError } from "../errors";
import { type AgentConfigIssue, locate, position, schemaIssues } from "./agent-config-issues";
import { normalizeKeys } from "./config-keys";

export type { AgentConfigIssue } from "./agent-config-issues";

const toggle = z.enum(["enabled", "disabled"]);

/**
 * The shape of an agent file (`agents/<name>.yaml`). Keys are snake_case like the seed's
 * `agent.yaml`, the `model:` block included (`base_url`, `tool_calls`: see config-keys.ts; the
 * old camelCase spellings still read, with a deprecation warning); unknown keys are refused,
 * with the closest known key, so a typo cannot silently fall back to a default.
 */
export const AgentFileSchema = z.strictObject({
  /** Display name; the agent's id is its file name. */
  name: z.string().min(1).optional(),
  instructions: z.string().default(""),
  /** Which model answers: `provider` (`openai`, `anthropic`, `scripted`) and its options. */
  model: ModelConfigSchema,
  mode: z.literal("text", { error: "only 'text' is supported" }).default("text"),
  /** The most tool rounds (model replies with tool calls) in one turn. */
  max_tool_rounds: z.number().int().min(1).max(100).default(8),
  /**
   * The ceiling of a page tool call's timeout. A call times out after the tool's `timeoutMs`, or
   * 30 s when it sets none, and never later than this.
   */
  page_tool_timeout_ms: z.number().int().positive().default(120_000),
  /**
   * The ceiling of a hosted tool call's timeout, when no worker hosting the tool set its own
   * (`toolTimeoutMs`). A call times out after the tool's `timeoutMs`, or 30 s.
   */
  hosted_tool_timeout_ms: z.number().int().positive().default(120_000),
  /** The ceiling of an in-process tool call's timeout (the tool's `timeoutMs`, or 30 s). */
  server_tool_timeout_ms: z.number().int().positive().default(120_000),
  /**
   * After an interrupt, how long the server waits for a page or worker to say what became of a
   * call it was asked to cancel, before it tells the model the cancel is unconfirmed.
   */
  tool_cancel_grace_ms: z.number().int().positive().max(60_000).default(2_000),
  /**
   * How many of the conversation's most recent items a `hosted.call` carries to the worker (the
   * tool's `ctx.conversation` there). Bounded because the frame goes out with every call: a
   * long session would otherwise send its whole history each time. 0 sends none.
   */
  hosted_call_conversation_items: z.number().int().min(0).default(50),
  /** How long an approval waits for the user, unless the tool sets `approval.expiresInMs`. */
  approval_timeout_ms: z.number().int().positive().default(300_000),
  /** How many tool calls of one session run at once. */
  max_concurrent_tool_calls: z.number().int().min(1).max(256).default(16),
  dispatch: z
    .strictObject({
      text: toggle.default("disabled"),
      incoming_call: toggle.default("disabled"),
    })
    .default({ text: "disabled", incoming_call: "disabled" }),
  /**
   * Services the agent uses with no code (MCP servers, OpenAPI APIs): each entry's tools are
   * offered as `<name>__<tool>`. See docs/connectors.md.
   */
  connectors: ConnectorEntriesSchema.default([]),
});

/**
 * An agent file as written (before defaults), for agents given in code.
 *
 * @example
 * ```ts
 * const support: AgentFileInput = { instructions: "Be brief.", model: { provider: "scripted" }, max_tool_rounds: 4 };
 * ```
 */
export type AgentFileInput = z.input<typeof AgentFileSchema>;

/**
 * A validated agent, as the rest of the server uses it.
 *
 * @example
 * ```ts
 * const agent: AgentConfig = defineAgent("support", { model: { provider: "scripted" } });
 * agent.toolCancelGraceMs; // 2000
 * ```
 */
export interface AgentConfig {
  /** The agent's id in URLs and frames: the file name without `.yaml`. */
  id: string;
  name: string;
  instructions: string;
  /** Passed to `createModel`. */
  model: ModelConfig;
  mode: "text";
  maxToolRounds: number;
  /** Ceilings of a call's timeout, by where it runs (2 minutes by default). */
  pageToolTimeoutMs: number;
  hostedToolTimeoutMs: number;
  serverToolTimeoutMs: number;
  /** How long an interrupt's cancel waits for the page or worker to answer (default 2 s). */
  toolCancelGraceMs: number;
  /** How many of the most recent conversation items a `hosted.call` carries (default 50). */
  hostedCallConversationItems: number;
  approvalTimeoutMs: number;
  maxConcurrentToolCalls: number;
  dispatch: { text: boolean; incomingCall: boolean };
  /** The `connectors:` entries as written (`${VAR}`s not yet filled in: safe to log). */
  connectors: ConnectorEntry[];
  /** The file it was read from, when it came from one. */
  file?: string;
  /** The line and column of a YAML path in that file (for problems found after parsing). */
  locate?: (path: readonly (string | number)[], atKey?: boolean) => { line?: number; column?: number };
}

/**
 * An agent file that cannot be used. The message names the file, the line and what is wrong, one
 * problem per line: `agents/support.yaml:4:18: max_tool_rounds: Too small: expected number to be >=1`.
 *
 * @example
 * ```ts
 * try { loadAgentConfigs(dir); } catch (e) { if (e instanceof AgentConfigError) console.error(e.message); }
 * ```
 */
export class AgentConfigError extends ServerError {
  readonly file: string | undefined;
  readonly issues: AgentConfigIssue[];
  constructor(file: string | undefined, issues: AgentConfigIssue[]) {
    const where = (issue: AgentConfigIssue) => {
      const position = issue.line === undefined ? "" : `:${issue.line}:${issue.column ?? 1}`;
      return file === undefined ? "" : `${file}${position}: `;
    };
    const lines = issues.map(
      (issue) => `${where(issue)}${issue.path ? `${issue.path}: ` : ""}${issue.message}`,
    );
    super("invalid_config", `invalid agent config:\n${lines.join("\n")}`, { path: issues[0]?.path });
    this.name = "AgentConfigError";
    this.file = file;
    this.issues = issues;
  }

  /** The line of the first problem, when it has one. */
  get line(): number | undefined {
    return this.issues[0]?.line;
  }
}

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Validates an agent given as an object (embedding, tests). Throws {@link AgentConfigError} with
 * field paths.
 *
 * @example
 * ```ts
 * const agent = defineAgent("support", { instructions: "Be brief.", model: { provider: "scripted" } });
 * ```
 */
export function defineAgent(id: string, input: AgentFileInput, file?: string): AgentConfig {
  if (!AGENT_ID.test(id)) {
    throw new AgentConfigError(file, [
      { path: "", message: `agent id '${id}' must be 1 to 64 letters, digits, '_' or '-'` },
    ]);
  }
  // Code may use either spelling (the types name the schema's), so no deprecation here.
  const { value, report } = normalizeKeys(input, AgentFileSchema);
  const parsed = AgentFileSchema.safeParse(value);
  if (!parsed.success) {
    throw new AgentConfigError(
      file,
      schemaIssues(parsed.error, report).map(({ path, message }) => ({ path, message })),
    );
  }
  return toAgentConfig(id, parsed.data, file);
}

/**
 * Parses one agent file's text. YAML syntax errors and schema errors both come back as an
 * {@link AgentConfigError} with the line and column of each problem.
 *
 * @example
 * ```ts
 * const agent = parseAgentConfig("support", "model:\n  provider: scripted\n", "agents/support.yaml");
 * ```
 */
export function parseAgentConfig(
  id: string,
  text: string,
  file: string,
  options: AgentConfigLoadOptions = {},
): AgentConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new AgentConfigError(
      file,
      doc.errors.map((error) => {
        return {
          path: "",
          message: error.message.split("\n")[0] ?? error.message,
          ...position(error.pos[0], lineCounter),
        };
      }),
    );
  }
  const value = doc.toJS() ?? {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new AgentConfigError(file, [
      { path: "", message: "an agent file must be a mapping of keys", line: 1 },
    ]);
  }
  if (!AGENT_ID.test(id)) {
    throw new AgentConfigError(file, [
      { path: "", message: `the file name '${id}' must be 1 to 64 letters, digits, '_' or '-'` },
    ]);
  }
  const normalized = normalizeKeys(value, AgentFileSchema);
  for (const key of normalized.report.deprecated) {
    const { line, column } = locate(doc.contents, key.path.slice(0, -1), key.written, lineCounter);
    options.warn?.(
      `${file}:${line ?? 1}:${column ?? 1}: ${issuePath(key.path)}: camelCase keys are deprecated, write ${key.preferred}`,
    );
  }
  const parsed = AgentFileSchema.safeParse(normalized.value);
  if (!parsed.success) {
    throw new AgentConfigError(
      file,
      schemaIssues(parsed.error, normalized.report).map(({ path, message, zodPath, unknownKey }) => ({
        path,
        message,
        ...locate(doc.contents, zodPath, unknownKey, lineCounter),
      })),
    );
  }
  const config = toAgentConfig(id, parsed.data, file);
  config.locate = (path, atKey) =>
    atKey && path.length > 0
      ? locate(doc.contents, path.slice(0, -1), String(path.at(-1)), lineCounter)
      : locate(doc.contents, path, undefined, lineCounter);
  return config;
}

/**
 * Reads every `agents/*.yaml` (and `.yml`) file under a config directory. A directory without
 * an `agents` folder has no agents; the first bad file throws {@link AgentConfigError}.
 *
 * @example
 * ```ts
 * const agents = loadAgentConfigs("/etc/patchbay"); // Map { "support" => AgentConfig }
 * ```
 */
export function loadAgentConfigs(
  configDir: string,
  options: AgentConfigLoadOptions = {},
): Map<string, AgentConfig> {
  const dir = join(configDir, "agents");
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw error;
  }
  const agents = new Map<string, AgentConfig>();
  for (const name of names) {
    const ext = extname(name);
    if (ext !== ".yaml" && ext !== ".yml") continue;
    const file = join(dir, name);
    const id = basename(name, ext);
    if (agents.has(id)) {
      throw new AgentConfigError(file, [{ path: "", message: `agent '${id}' is defined twice` }]);
    }
    agents.set(id, parseAgentConfig(id, readFileSync(file, "utf8"), file, options));
  }
  return agents;
}

function toAgentConfig(id: string, data: z.output<typeof AgentFileSchema>, file?: string): AgentConfig {
  const config: AgentConfig = {
    id,
    name: data.name ?? id,
    instructions: data.instructions,
    model: data.model as ModelConfig,
    mode: data.mode,
    maxToolRounds: data.max_tool_rounds,
    pageToolTimeoutMs: data.page_tool_timeout_ms,
    hostedToolTimeoutMs: data.hosted_tool_timeout_ms,
    serverToolTimeoutMs: data.server_tool_timeout_ms,
    toolCancelGraceMs: data.tool_cancel_grace_ms,
    hostedCallConversationItems: data.hosted_call_conversation_items,
    approvalTimeoutMs: data.approval_timeout_ms,
    maxConcurrentToolCalls: data.max_concurrent_tool_calls,
    dispatch: {
      text: data.dispatch.text === "enabled",
      incomingCall: data.dispatch.incoming_call === "enabled",
    },
    connectors: data.connectors,
  };
  if (file !== undefined) config.file = file;
  return config;
}

/**
 * Options of {@link loadAgentConfigs} and {@link parseAgentConfig}.
 *
 * @example
 * ```ts
 * loadAgentConfigs(dir, { warn: (message) => logger.warn(message) });
 * ```
 */
export interface AgentConfigLoadOptions {
  /** Told about what still works but should change (old camelCase keys), with file and line. */
  warn?: (message: string) => void;
}
