// The wording of zod 3 issues, apart from zod-issues.ts: only the Node entry reads zod 3 schemas
// (zod-fallback.ts), so a page's chunk of zod 4 wording does not carry it.
import {
  alternatives,
  boundMessage,
  EXTRA_FORBIDDEN,
  FIELD_REQUIRED,
  formatMessage,
  patternMessage,
  typeMessage,
  unionMessage,
  VALUE_INVALID,
} from "./issue-wording";
import { boundKind, branchMessages, type ZodIssueLike } from "./zod-issues";

/** The zod 3 schema internals the wording reads, to find the pattern a string failed. */
interface Zod3Node {
  _def: {
    typeName?: string;
    checks?: { kind: string; regex?: RegExp }[];
    [key: string]: unknown;
  };
}

const WRAPPERS = ["innerType", "schema", "type", "in", "out"];

// zod 3 issues name a failed regex without the pattern; find the string schemas at the issue's
// path and pick the first regex the value fails.
function zod3Candidates(node: Zod3Node | undefined, path: readonly PropertyKey[], depth = 0): Zod3Node[] {
  if (!node?._def || depth > 64) return [];
  const def = node._def;
  switch (def.typeName) {
    case "ZodString":
      return path.length === 0 ? [node] : [];
    case "ZodObject": {
      if (path.length === 0) return [];
      const shape = typeof def.shape === "function" ? (def.shape as () => Record<string, Zod3Node>)() : {};
      const [head, ...rest] = path;
      return Object.hasOwn(shape, String(head)) ? zod3Candidates(shape[String(head)], rest, depth + 1) : [];
    }
    case "ZodArray":
      return path.length === 0 ? [] : zod3Candidates(def.type as Zod3Node, path.slice(1), depth + 1);
    case "ZodTuple": {
      const items = (def.items as Zod3Node[]) ?? [];
      return path.length === 0 ? [] : zod3Candidates(items[Number(path[0])], path.slice(1), depth + 1);
    }
    case "ZodRecord":
      return path.length === 0 ? [] : zod3Candidates(def.valueType as Zod3Node, path.slice(1), depth + 1);
    case "ZodUnion":
    case "ZodDiscriminatedUnion": {
      const options = (def.options as Iterable<Zod3Node>) ?? [];
      return [...options].flatMap((option) => zod3Candidates(option, path, depth + 1));
    }
    case "ZodLazy":
      return zod3Candidates((def.getter as () => Zod3Node)(), path, depth + 1);
    default:
      for (const key of WRAPPERS) {
        const inner = def[key] as Zod3Node | undefined;
        if (inner && typeof inner === "object" && "_def" in inner)
          return zod3Candidates(inner, path, depth + 1);
      }
      return [];
  }
}

function zod3Pattern(root: unknown, path: readonly PropertyKey[], data: unknown): RegExp | undefined {
  const regexes = zod3Candidates(root as Zod3Node, path).flatMap((node) =>
    (node._def.checks ?? []).flatMap((check) => (check.kind === "regex" && check.regex ? [check.regex] : [])),
  );
  if (typeof data !== "string") return regexes[0];
  return (
    regexes.find((regex) => {
      regex.lastIndex = 0;
      return !regex.test(data);
    }) ?? regexes[0]
  );
}

/**
 * The Pydantic-style message for a zod 3 issue, as handed to a per-parse `errorMap` (with the
 * value in `data`); `root` is the schema being parsed, searched for the pattern a string failed.
 * Returns `undefined` to keep zod's own message.
 */
export function zod3IssueMessage(issue: ZodIssueLike, data: unknown, root: unknown): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.received === "undefined") return FIELD_REQUIRED;
      return typeMessage(String(issue.expected), data);
    case "invalid_literal":
      return `Input should be ${alternatives([issue.expected])}`;
    case "invalid_enum_value":
    case "invalid_union_discriminator":
      return `Input should be ${alternatives(issue.options as unknown[])}`;
    case "invalid_union": {
      const errors = (issue.unionErrors as { issues: ZodIssueLike[] }[]) ?? [];
      return unionMessage(
        branchMessages(
          errors.map((e) => e.issues),
          issue.path,
        ),
      );
    }
    case "unrecognized_keys":
      return EXTRA_FORBIDDEN;
    case "too_big":
    case "too_small": {
      const kind = boundKind(issue.type);
      if (!kind) return undefined;
      const side = issue.code === "too_big" ? "max" : "min";
      const limit = (side === "max" ? issue.maximum : issue.minimum) as number | bigint;
      return boundMessage(kind, side, limit, {
        inclusive: issue.inclusive !== false,
        exact: issue.exact === true,
      });
    }
    case "invalid_string": {
      const validation = issue.validation;
      if (validation === "regex") {
        const pattern = zod3Pattern(root, issue.path, data);
        return pattern ? patternMessage(pattern) : "String should match the required pattern";
      }
      if (validation && typeof validation === "object") {
        const v = validation as Record<string, unknown>;
        if ("startsWith" in v) return `String should start with '${String(v.startsWith)}'`;
        if ("endsWith" in v) return `String should end with '${String(v.endsWith)}'`;
        if ("includes" in v) return `String should contain '${String(v.includes)}'`;
      }
      return formatMessage(String(validation));
    }
    case "not_multiple_of":
      return `Input should be a multiple of ${String(issue.multipleOf)}`;
    case "custom":
      return VALUE_INVALID;
    default:
      return undefined;
  }
}
