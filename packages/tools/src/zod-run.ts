import type { ValidationResult } from "./validate-arguments";
import { fromIssues, type SafeParseResult, zod4IssueMessage } from "./zod-issues";

/** What zod 4's `_zod.run` answers: the parsed value and the issues found. */
interface ZodPayload {
  value: unknown;
  issues: unknown[];
}

type ZodRun = (payload: ZodPayload, ctx: { async: boolean }) => ZodPayload | Promise<ZodPayload>;

/**
 * A zod 4.2+ schema's check as the Node entry makes it (zod-fallback.ts): what
 * `safeParseAsync` does, without its async wrapper. zod's run answers synchronously unless a part
 * of the schema (an async refinement or transform) did not, so most calls cost no promise, and
 * no part of the schema runs twice. A refused call is parsed once more with the error map, which
 * sees each issue's input, for the wording. Undefined for a schema without `_zod.run`.
 */
export function zodParse(
  schema: object,
  parseAsync: (value: unknown, params?: object) => Promise<unknown>,
):
  | ((args: Record<string, unknown>) => ValidationResult<unknown> | Promise<ValidationResult<unknown>>)
  | undefined {
  const zod = (schema as { _zod?: { run?: ZodRun } })._zod;
  if (typeof zod?.run !== "function") return undefined;
  const own = zod as { run: ZodRun };
  const refused = async (args: Record<string, unknown>) =>
    fromIssues((await parseAsync(args, { error: zod4IssueMessage })) as SafeParseResult);
  const settle = (args: Record<string, unknown>, payload: ZodPayload) =>
    payload.issues.length ? refused(args) : ({ ok: true, value: payload.value } as const);
  return (args) => {
    const payload = own.run({ value: args, issues: [] }, { async: true });
    return payload instanceof Promise ? payload.then((done) => settle(args, done)) : settle(args, payload);
  };
}
