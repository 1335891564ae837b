import { z } from "zod";

/**
 * The config under `mcp:`: a server to start over stdio (`command`, `args`, `env`, `cwd`) or one
 * to reach over Streamable HTTP (`url`, `headers`). Exactly one of `command` and `url`.
 *
 * @example
 * ```ts
 * McpConfigSchema.parse({ command: "npx", args: ["@modelcontextprotocol/server-memory"] });
 * McpConfigSchema.parse({ url: "https://mcp.example.com/mcp", headers: { authorization: "Bearer t" } });
 * ```
 */
export const McpConfigSchema = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    /** Added to the safe default environment (PATH, HOME, ...) the server starts with. */
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: "must be an http or https URL" }).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /** The first wait before a stdio server that exited is started again, or an HTTP server that cannot be reached is reconnected to; it doubles each failed try. Default 100 ms. */
    restart_backoff_ms: z.number().int().min(10).max(600_000).optional(),
    /** The longest wait between restarts (stdio) or reconnects (HTTP). Default 30 s. */
    max_restart_backoff_ms: z.number().int().min(10).max(600_000).optional(),
    /** Tool results longer than this are cut (the model is told). Default 100 000 characters. */
    max_response_chars: z.number().int().min(100).max(5_000_000).optional(),
  })
  .superRefine((config, ctx) => {
    if (config.command === undefined && config.url === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["command"],
        message: "is required: give 'command' (stdio) or 'url' (Streamable HTTP)",
      });
    }
    if (config.command !== undefined && config.url !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["url"],
        message: "give 'command' (stdio) or 'url' (Streamable HTTP), not both",
      });
    }
    const stdioOnly = (["args", "env", "cwd"] as const).filter((key) => config[key] !== undefined);
    if (config.url !== undefined) {
      for (const key of stdioOnly)
        ctx.addIssue({ code: "custom", path: [key], message: "is for stdio servers ('command'), not 'url'" });
    }
    if (config.command !== undefined && config.headers !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["headers"],
        message: "is for Streamable HTTP servers ('url'), not 'command'",
      });
    }
  });

/**
 * A checked `mcp:` config.
 *
 * @example
 * ```ts
 * const config: McpConfig = { command: "npx", args: ["@modelcontextprotocol/server-everything", "stdio"] };
 * ```
 */
export type McpConfig = z.output<typeof McpConfigSchema>;
