import { readFileSync } from "node:fs";
import { isMap, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { Connector } from "./connector";
import { ConnectorEntriesSchema } from "./connector-entry";
import { ConnectorConfigError, type ConnectorConfigIssue } from "./errors";
import { type PreparedConnector, prepareConnectors } from "./prepare-connectors";

/** The YAML node at a path (the nearest one that exists); with `atKey`, the last segment's key. */
function nodeAt(root: unknown, path: readonly (string | number)[], atKey = false): Node | undefined {
  let node = root as Node | undefined;
  for (const [i, segment] of path.entries()) {
    let child: Node | undefined;
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => String((item.key as { value?: unknown } | null)?.value ?? item.key) === String(segment),
      );
      const key = pair?.key as Node | undefined;
      child = atKey && i === path.length - 1 ? key : ((pair?.value as Node | null | undefined) ?? key);
    } else if (isSeq(node) && typeof segment === "number") {
      child = node.items[segment] as Node | undefined;
    }
    if (!child) break;
    node = child;
  }
  return node;
}

/**
 * Reads a YAML file with a `connectors:` list (a worker's own config) and prepares it against the
 * kinds. Every problem (YAML syntax, entry shape, kind config, unset `${VAR}`) comes back at once
 * in a {@link ConnectorConfigError} whose message names the file, line and field.
 *
 * @example
 * ```ts
 * const prepared = readConnectorsFile("./connectors.yaml", { kinds: builtinConnectors, env: process.env });
 * ```
 */
export function readConnectorsFile(
  file: string,
  options: { kinds: readonly Connector<any>[]; env: Record<string, string | undefined> },
): PreparedConnector[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(readFileSync(file, "utf8"), {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: true,
  });
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  if (doc.errors.length > 0) {
    throw new ConnectorConfigError(
      doc.errors.map((error) => ({
        path: [],
        message: error.message.split("\n")[0] ?? error.message,
        ...at(error.pos[0]),
      })),
      file,
    );
  }
  const locate = (issues: ConnectorConfigIssue[]): ConnectorConfigIssue[] =>
    issues.map((issue) => {
      const node = nodeAt(doc.contents, issue.path, issue.atKey);
      return node?.range ? { ...issue, ...at(node.range[0]) } : { ...issue, line: 1, column: 1 };
    });
  const value = (doc.toJS() ?? {}) as { connectors?: unknown };
  const parsed = ConnectorEntriesSchema.safeParse(value.connectors ?? []);
  if (!parsed.success) {
    throw new ConnectorConfigError(
      locate(
        parsed.error.issues.map((issue) => ({
          path: ["connectors", ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))],
          message: issue.message,
        })),
      ),
      file,
    );
  }
  try {
    return prepareConnectors(parsed.data, options);
  } catch (error) {
    if (!(error instanceof ConnectorConfigError)) throw error;
    throw new ConnectorConfigError(
      locate(error.issues.map((issue) => ({ ...issue, path: ["connectors", ...issue.path] }))),
      file,
    );
  }
}
