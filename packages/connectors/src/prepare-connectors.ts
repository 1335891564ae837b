import type { Connector } from "./connector";
import { type ConnectorEntry, connectorKindOf } from "./connector-entry";
import { ConnectorConfigError, type ConnectorConfigIssue } from "./errors";
import { interpolateEnv } from "./interpolate";

/**
 * An entry whose kind is known and whose config its kind accepted, with `${VAR}`s filled in.
 * `config` may hold secrets: hand it to `connect` only; log `entry`, which holds the names.
 *
 * @example
 * ```ts
 * const [prepared] = prepareConnectors(entries, { kinds: [mcpConnector], env: process.env });
 * prepared.entry.name; // "everything"
 * ```
 */
export interface PreparedConnector {
  entry: ConnectorEntry;
  kind: Connector<unknown>;
  config: unknown;
  /** The values filled in for `${VAR}`s: redacted from every reason and log line. */
  secrets: string[];
}

/**
 * Checks every entry against the known kinds: an unknown kind, a config its schema refuses or an
 * unset `${VAR}` is a {@link ConnectorConfigError} whose issue paths start at the list
 * (`[0, "mcp", "command"]`), all problems at once.
 *
 * @example
 * ```ts
 * const prepared = prepareConnectors(agent.connectors, { kinds: builtinConnectors, env: process.env });
 * ```
 */
export function prepareConnectors(
  entries: readonly ConnectorEntry[],
  options: { kinds: readonly Connector<any>[]; env: Record<string, string | undefined> },
): PreparedConnector[] {
  const issues: ConnectorConfigIssue[] = [];
  const prepared: PreparedConnector[] = [];
  entries.forEach((entry, i) => {
    const kindName = connectorKindOf(entry);
    const kind = options.kinds.find((candidate) => candidate.name === kindName);
    if (!kind) {
      const known = options.kinds.map((candidate) => candidate.name).join(", ");
      issues.push({
        path: [i, kindName],
        atKey: true,
        message: `unknown connector kind '${kindName}' (known: ${known})`,
      });
      return;
    }
    const raw = (entry as Record<string, unknown>)[kindName] ?? {};
    const filled = interpolateEnv(raw, options.env, [i, kindName]);
    if (filled.issues.length > 0) {
      issues.push(...filled.issues);
      return;
    }
    const parsed = kind.configSchema.safeParse(filled.value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        // The message only: zod messages name types and limits, never the (possibly secret) value.
        issues.push({
          path: [i, kindName, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))],
          message: issue.message,
        });
      }
      return;
    }
    prepared.push({ entry, kind, config: parsed.data, secrets: filled.secrets });
  });
  if (issues.length > 0) throw new ConnectorConfigError(issues);
  return prepared;
}
