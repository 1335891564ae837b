// TEMPLATE: one connector kind per package. Rename "webhook" everywhere, keep the shape:
// a zod config schema (its paths are the YAML paths under the kind's key), `connect` that
// checks what it can up front and returns the tools, and tools that throw ToolError for what
// the model should read. Patchbay does the rest (validation, approval, timeouts, progress).
import { defineConnector } from "@patchbay/connectors";
import { ToolError } from "@patchbay/tools";
import { z } from "zod";

/**
 * The config under `webhook:` in a `connectors:` entry. Secrets come from `${ENV}` in the YAML;
 * the connector receives them filled in and must never log them.
 *
 * @example
 * ```ts
 * WebhookConfigSchema.parse({ url: "https://hooks.example.com/T1/B2", token: "t" });
 * ```
 */
export const WebhookConfigSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "must be an http or https URL" }),
  token: z.string().min(1).optional(),
  /** The longest message the tool accepts. */
  max_chars: z.number().int().min(1).max(40_000).default(4_000),
});

/**
 * Posts a message to a webhook (Slack-style incoming webhooks and the like): one tool, `send`.
 *
 * @example
 * ```ts
 * const server = await createServer({ connectors: [webhookConnector], configDir });
 * // agents/support.yaml: connectors: [{ name: team, webhook: { url: "${TEAM_HOOK}" } }]
 * ```
 */
export const webhookConnector = defineConnector({
  name: "webhook",
  configSchema: WebhookConfigSchema,
  async connect(config, context) {
    context.logger.info("webhook ready", { host: new URL(config.url).host });
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (config.token) headers.authorization = `Bearer ${config.token}`;
    return {
      tools: () => [
        {
          name: "send",
          description: "Post a message to the team channel",
          inputSchema: {
            type: "object",
            properties: { text: { type: "string", minLength: 1, maxLength: config.max_chars } },
            required: ["text"],
          },
          // Not read-only: Patchbay asks the user before each send unless the YAML's approval says otherwise.
          annotations: { readOnlyHint: false, destructiveHint: false },
          run: async (args, signal, ctx) => {
            ctx.update("Posting the message");
            const response = await fetch(config.url, {
              method: "POST",
              headers,
              body: JSON.stringify({ text: args.text }),
              signal,
            });
            if (!response.ok) {
              throw new ToolError(
                `The webhook answered HTTP ${response.status}; the message was not posted.`,
                {
                  code: `http_${response.status}`,
                },
              );
            }
            return "Posted.";
          },
        },
      ],
      close: async () => {},
    };
  },
});
