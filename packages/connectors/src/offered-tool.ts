import { type ToolApproval, type ToolDefinition, ToolError, ToolOutput } from "@patchbay/tools";
import type { ConnectorTool } from "./connector";
import type { ConnectorEntry } from "./connector-entry";
import { redactSecrets } from "./interpolate";

const SEPARATOR = "__";

/**
 * The name a connector tool is offered under: `<connector>__<tool>`, with characters a tool name
 * may not hold (`.`, `/`) turned into `_`. `undefined` when it would pass 64 characters.
 *
 * @example
 * ```ts
 * offeredToolName("everything", "get-sum"); // "everything__get-sum"
 * ```
 */
export function offeredToolName(connector: string, tool: string): string | undefined {
  const name = `${connector}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  return name.length <= 64 ? name : undefined;
}

/**
 * Whether the entry's `tools:` lists let this tool through.
 *
 * @example
 * ```ts
 * isToolOffered({ name: "e", mcp: {}, tools: { allow: ["echo"] } }, "echo"); // true
 * ```
 */
export function isToolOffered(entry: ConnectorEntry, tool: string): boolean {
  if (entry.tools?.allow && !entry.tools.allow.includes(tool)) return false;
  return !entry.tools?.deny?.includes(tool);
}

/**
 * The names in the entry's `approval.tools` that are not among `serviceTools` (the names the
 * service offers), `*` aside: typos, which {@link needsApproval} fails closed on.
 *
 * @example
 * ```ts
 * unknownApprovalTools({ name: "pets", openapi: {}, approval: { tools: ["creatPet"] } }, ["createPet"]); // ["creatPet"]
 * ```
 */
export function unknownApprovalTools(entry: ConnectorEntry, serviceTools: readonly string[]): string[] {
  return (entry.approval?.tools ?? []).filter((name) => name !== "*" && !serviceTools.includes(name));
}

/**
 * Whether a call of this tool asks the user first: the entry's `approval.tools` when given
 * (`*` for all), else the annotations (asks unless read-only and not destructive). Given the
 * names the service offers (`serviceTools`), a list that names a tool the service does not offer
 * (a typo) fails closed: while it does, a tool that would ask by its annotations asks even when
 * not listed.
 *
 * @example
 * ```ts
 * needsApproval({ name: "e", mcp: {} }, { name: "echo", annotations: { readOnlyHint: true } } as ConnectorTool); // false
 * ```
 */
export function needsApproval(
  entry: ConnectorEntry,
  tool: Pick<ConnectorTool, "name" | "annotations">,
  serviceTools?: readonly string[],
): boolean {
  const hints = tool.annotations ?? {};
  const byHints = !(hints.readOnlyHint === true && hints.destructiveHint !== true);
  const listed = entry.approval?.tools;
  if (!listed) return byHints;
  if (listed.includes("*") || listed.includes(tool.name)) return true;
  return byHints && serviceTools !== undefined && unknownApprovalTools(entry, serviceTools).length > 0;
}

function approvalFor(
  entry: ConnectorEntry,
  tool: ConnectorTool,
  serviceTools: readonly string[] | undefined,
): ToolApproval | undefined {
  if (!needsApproval(entry, tool, serviceTools)) return undefined;
  const title = entry.approval?.title;
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, unknown>;
  // The configured title only where every {placeholder} is an argument of this tool.
  const fits =
    title !== undefined &&
    [...title.matchAll(/\{([^{}]*)\}/g)].every((match) =>
      Object.hasOwn(properties, match[1]!.split(".")[0]!),
    );
  if (fits) return { title };
  return { title: `Allow ${entry.name} to run ${tool.name}?` };
}

/**
 * How a connector instance answers for its state when a call runs.
 *
 * @example
 * ```ts
 * const state: ConnectorRunState = { downReason: () => undefined };
 * ```
 */
export interface ConnectorRunState {
  /** Why the connector is down, or `undefined` while it is up. */
  downReason(): string | undefined;
  /** Values redacted from what the model reads, results and errors (the filled-in `${VAR}`s). */
  secrets?: readonly string[];
  /** The names of every tool the service offers: an `approval.tools` name not among them fails closed (see {@link needsApproval}). */
  serviceTools?: readonly string[];
}

/**
 * A connector tool's result with the secrets in its words blanked: a text, a `ToolOutput`'s text,
 * or the JSON text of any other value that holds one (the value as it is when none does).
 */
function withoutSecrets(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return redactSecrets(value, secrets);
  if (value instanceof ToolOutput) {
    const text = redactSecrets(value.text, secrets);
    return text === value.text ? value : new ToolOutput({ text, images: value.images });
  }
  if (value === undefined || value === null || typeof value !== "object") return value;
  const json = JSON.stringify(value);
  if (json === undefined) return value;
  const text = redactSecrets(json, secrets);
  return text === json ? value : text;
}

/**
 * The tool definition a connector tool is registered as: the offered name, the service's schema
 * as the JSON Schema, approval from the entry or the annotations, the entry's `timeout_ms`,
 * interruptible (an interrupt aborts the call's signal, which the connector passes on). While the
 * connector is down the call fails with a tool error saying so.
 *
 * @example
 * ```ts
 * tools.register(toOfferedDefinition(entry, tool, "everything__echo", state));
 * ```
 */
export function toOfferedDefinition(
  entry: ConnectorEntry,
  tool: ConnectorTool,
  offeredName: string,
  state: ConnectorRunState,
): ToolDefinition {
  const { $schema: _dialect, ...parameters } = tool.inputSchema as Record<string, unknown>;
  const definition: ToolDefinition = {
    name: offeredName,
    description: tool.description.trim() || tool.annotations?.title || `${tool.name} (${entry.name})`,
    parameters: { type: "object", properties: {}, ...parameters } as ToolDefinition["parameters"],
    interruptible: true,
    ...(tool.lightSignal === true ? { lightSignal: true } : {}),
    run: (args, signal, ctx) => {
      const down = state.downReason();
      if (down !== undefined) {
        throw new ToolError(
          `The ${entry.name} service is unavailable right now (${down}). Try again later.`,
          {
            code: "connector_unavailable",
          },
        );
      }
      const secrets = state.secrets ?? [];
      if (secrets.length === 0) return tool.run(args, signal, ctx);
      // A service may echo what it was sent (a URL with a key, its headers): the model never
      // reads a secret, in a result or an error.
      return Promise.resolve()
        .then(() => tool.run(args, signal, ctx))
        .then(
          (value) => withoutSecrets(value, secrets),
          (error: unknown) => {
            if (error instanceof ToolError) {
              const message = redactSecrets(error.message, secrets);
              if (message !== error.message) throw new ToolError(message, { code: error.code });
            }
            throw error;
          },
        );
    },
  };
  const approval = approvalFor(entry, tool, state.serviceTools);
  if (approval) definition.approval = approval;
  if (entry.timeout_ms !== undefined) definition.timeoutMs = entry.timeout_ms;
  if (entry.max_concurrent_calls !== undefined) definition.sharedConcurrency = entry.max_concurrent_calls;
  const displayTitle = tool.displayTitle ?? tool.annotations?.title;
  if (displayTitle) definition.displayTitle = displayTitle;
  return definition;
}
