import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { IdSchema, JsonObjectSchema, type WireError } from "@patchbay/protocol";
import { z } from "zod";
import type { Authenticator } from "../auth/auth";
import { ServerError } from "../errors";
import type { DispatchWork, DispatchWorkReceipt } from "../extensions/dispatch-seams";
import type { HttpRouteExtension } from "../http/http-api";
import { parseBody, readJsonBody, sendError, sendJson } from "../http/http-json";
import { type Logger, silentLogger } from "../observability/logger";

const ROUTE = /^\/v1\/agents\/([^/]+)\/inbound\/(messages|calls)$/;

/** Fields that carry media; a worker receives text only, so a body with any of them is refused. */
const MEDIA_FIELDS = ["images", "image", "video", "videos", "attachments", "media"] as const;

/**
 * The body of `POST /v1/agents/:agent/inbound/messages`: a message from a channel (an SMS
 * number, a chat thread) for a worker's `onMessage`.
 */
export const InboundMessageBody = z.strictObject({
  channel: z.strictObject({ type: z.string().min(1).max(64), id: IdSchema }),
  userId: IdSchema,
  text: z.string().min(1).max(100_000),
  metadata: JsonObjectSchema.optional(),
});

/**
 * The body of `POST /v1/agents/:agent/inbound/calls`: a telephony provider's webhook for an
 * incoming call (its signalling; audio is out of scope), for a worker's `onCall`.
 */
export const InboundCallBody = z.strictObject({
  from: z.string().min(1).max(64),
  to: z.string().min(1).max(64),
  customData: JsonObjectSchema.optional(),
});

/** What the inbound routes need. */
export interface InboundRoutesOptions {
  authenticator: Authenticator;
  /** Where the work goes (a cluster may hand it to another node: `submit` may be async). */
  work: { submit(work: DispatchWork): DispatchWorkReceipt | Promise<DispatchWorkReceipt> };
  agentExists: (agent: string) => boolean;
  /** Largest body accepted. Default 1 MiB. */
  maxBodyBytes?: number;
  logger?: Logger;
}

/**
 * The HTTP endpoints through which messages and incoming calls reach workers without a session:
 * `POST /v1/agents/:agent/inbound/messages` and `POST /v1/agents/:agent/inbound/calls`. They
 * take the API key (`x-api-key` and `authorization: Bearer <secret>`), route like any work
 * (capacity, queue and all), and answer `202 { workId, status }` once the work is offered or
 * queued, or `503 no_worker` / `503 queue_full` when it was dropped. A message with images or
 * video is refused with `422 unsupported_content`.
 */
export function inboundRoutes(options: InboundRoutesOptions): HttpRouteExtension {
  const logger = options.logger ?? silentLogger;
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  return async (request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = ROUTE.exec(url.pathname);
    if (!match) return false;
    try {
      if (request.method !== "POST") {
        response.setHeader("allow", "POST");
        sendJson(response, 405, {
          error: {
            code: "method_not_allowed",
            message: `${request.method} is not allowed on ${url.pathname}`,
          },
        });
        return true;
      }
      const principal = await options.authenticator.fromHttpHeaders(request.headers);
      if (principal.kind !== "backend") {
        throw new ServerError(
          "forbidden",
          "inbound messages and calls need the API key and secret, not a user token",
        );
      }
      const agent = decodeURIComponent(match[1]!);
      if (!options.agentExists(agent)) throw new ServerError("not_found", `agent ${agent} does not exist`);
      const body = await readJsonBody(request, maxBodyBytes);
      const now = Date.now();
      if (match[2] === "messages") {
        const media = MEDIA_FIELDS.find(
          (field) => typeof body === "object" && body !== null && field in body,
        );
        if (media !== undefined) {
          sendJson(response, 422, {
            error: {
              code: "unsupported_content",
              message: "messages with images or video cannot be routed to a dispatch worker; send text only",
              path: media,
            },
          });
          return true;
        }
        const input = parseBody(InboundMessageBody, body);
        const messageId = `m_${randomUUID()}`;
        const receipt = await options.work.submit({
          kind: "message",
          message: {
            id: messageId,
            agent,
            sessionId: null,
            channel: input.channel,
            user: { id: input.userId },
            text: input.text,
            createdAt: now,
            metadata: input.metadata ?? {},
          },
        });
        reply(response, receipt, { messageId });
      } else {
        const input = parseBody(InboundCallBody, body);
        const callId = `pc_${randomUUID()}`;
        const receipt = await options.work.submit({
          kind: "call",
          call: {
            id: callId,
            agent,
            from: input.from,
            to: input.to,
            customData: input.customData ?? {},
            createdAt: now,
          },
        });
        reply(response, receipt, { callId });
      }
      return true;
    } catch (error) {
      sendError(response, error, (unexpected) =>
        logger.error("inbound request failed", { path: url.pathname, error: unexpected }),
      );
      return true;
    }
  };
}

function reply(response: ServerResponse, receipt: DispatchWorkReceipt, ids: Record<string, string>): void {
  if (receipt.status === "dropped") {
    // Every drop is about capacity to serve (none connected, all busy, shutting down): 503.
    sendJson(response, 503, { error: receipt.error satisfies WireError });
    return;
  }
  sendJson(response, 202, { workId: receipt.workId, ...ids, status: receipt.status });
}
