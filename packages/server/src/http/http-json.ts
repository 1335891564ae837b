import type { IncomingMessage, ServerResponse } from "node:http";
import { formatZodIssues, issuePath } from "@patchbay/protocol";
import type { z } from "zod";
import { AuthError, ServerError, toWireError } from "../errors";

/**
 * Reads a request body as JSON, refusing it with `payload_too_large` as soon as it passes `maxBytes`
 * (declared or counted, so a lying `content-length` does not get through) and with
 * `invalid_json` when it does not parse. An empty body reads as `{}`.
 */
export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > maxBytes) {
    request.resume();
    throw new ServerError(
      "payload_too_large",
      `request body is ${declared} bytes, over the limit of ${maxBytes}`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).byteLength;
    if (size > maxBytes) {
      request.resume();
      throw new ServerError("payload_too_large", `request body is over the limit of ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (error) {
    throw new ServerError("invalid_json", `request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Checks a parsed body against a schema; a mismatch is `invalid_request` with the path of the
 * first wrong field, so the caller's 400 names it.
 */
export function parseBody<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  throw new ServerError("invalid_request", `invalid body: ${formatZodIssues(result.error).join("; ")}`, {
    ...(first ? { path: issuePath(first.path) } : {}),
  });
}

/** Answers with a JSON body (or none, for a 204), unless an answer already went out. */
export function sendJson(response: ServerResponse, status: number, body?: unknown): void {
  if (response.headersSent) return;
  if (body === undefined) {
    response.writeHead(status);
    response.end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

/**
 * Answers an error as `{ "error": { "code", "message", "path"? } }` with the status of its code
 * (500 for anything that is not a {@link ServerError}, which `onUnexpected` hears about: a bug,
 * worth a log line) and the `www-authenticate` challenge a 401 owes.
 */
export function sendError(
  response: ServerResponse,
  error: unknown,
  onUnexpected: (error: unknown) => void,
): void {
  if (!(error instanceof ServerError)) onUnexpected(error);
  if (error instanceof AuthError && !response.headersSent) {
    response.setHeader("www-authenticate", 'Bearer realm="patchbay"');
  }
  sendJson(response, error instanceof ServerError ? error.status : 500, { error: toWireError(error) });
}
