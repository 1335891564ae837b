import { formatZodIssues, issuePath } from "@patchbay/protocol";
import { isMap, isSeq, type LineCounter, type Node } from "yaml";
import type { z } from "zod";
import { type KeyReport, snakeCase } from "./config-keys";

// What is wrong in an agent file, said the way its author wrote it: snake_case paths, one issue
// per unknown key with a suggestion, and the line and column in the YAML.

/**
 * One problem in an agent file, located where it can be.
 *
 * @example
 * ```ts
 * const issue: AgentConfigIssue = { path: "max_tool_rounds", message: "Too small", line: 4, column: 18 };
 * ```
 */
export interface AgentConfigIssue {
  path: string;
  message: string;
  line?: number;
  column?: number;
}

/** Zod's issues as config issues: snake_case paths, one issue per unknown key with a suggestion. */
export function schemaIssues(
  error: z.ZodError,
  report: KeyReport,
): (AgentConfigIssue & { zodPath: PropertyKey[]; unknownKey?: string })[] {
  const lines = formatZodIssues(error);
  return error.issues.flatMap((issue, i) => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => {
        const suggestion = report.suggestions.get([...issue.path, key].join("."));
        return {
          path: displayPath([...issue.path, key]),
          message: `unknown key${suggestion ? ` (did you mean '${suggestion}'?)` : ""}`,
          zodPath: issue.path,
          unknownKey: key,
        };
      });
    }
    const path = issuePath(issue.path);
    return [
      {
        path: displayPath(issue.path),
        message: stripPath(lines[i] ?? issue.message, path),
        zodPath: issue.path,
      },
    ];
  });
}

/** A path as the file spells it: snake_case keys, dotted (`model.rules.0.tool_calls`). */
function displayPath(path: readonly PropertyKey[]): string {
  return issuePath(path.map((segment) => (typeof segment === "string" ? snakeCase(segment) : segment)));
}

function stripPath(line: string, path: string): string {
  return path && line.startsWith(`${path}: `) ? line.slice(path.length + 2) : line;
}

/**
 * The line and column of a zod issue in the YAML document: the node at the issue's path, or for
 * a missing key the mapping that should hold it, or for an unknown key that key itself.
 */
export function locate(
  root: unknown,
  path: readonly PropertyKey[],
  unknownKey: string | undefined,
  lineCounter: LineCounter,
): { line?: number; column?: number } {
  let node = root as Node | null | undefined;
  for (const segment of path) {
    const child = childOf(node, segment);
    if (child === undefined) break;
    node = child;
  }
  if (unknownKey !== undefined && isMap(node)) {
    const pair = node.items.find((item) => keyText(item.key) === unknownKey);
    const keyNode = pair?.key as Node | undefined;
    if (keyNode?.range) return position(keyNode.range[0], lineCounter);
  }
  if (node?.range) return position(node.range[0], lineCounter);
  return { line: 1, column: 1 };
}

function childOf(node: Node | null | undefined, segment: PropertyKey): Node | undefined {
  if (isMap(node)) {
    // The file may spell the key in snake_case or in the old camelCase.
    const wanted = snakeCase(String(segment));
    const pair = node.items.find((item) => {
      const text = keyText(item.key);
      return text === String(segment) || (text !== undefined && snakeCase(text) === wanted);
    });
    if (!pair) return undefined;
    // A key with no value (`model:`) has a null value node: point at the key instead.
    return (pair.value as Node | null) ?? (pair.key as Node);
  }
  if (isSeq(node) && typeof segment === "number")
    return (node.items[segment] as Node | undefined) ?? undefined;
  return undefined;
}

function keyText(key: unknown): string | undefined {
  if (key && typeof key === "object" && "value" in key) return String((key as { value: unknown }).value);
  return key === undefined || key === null ? undefined : String(key);
}

export function position(offset: number, lineCounter: LineCounter): { line: number; column: number } {
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}
