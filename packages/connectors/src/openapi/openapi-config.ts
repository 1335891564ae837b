import { z } from "zod";

/**
 * The config under `openapi:`: where the OpenAPI 3 document is (a file path or an http(s) URL),
 * the base URL calls go to (default: the document's first `servers` entry, resolved against the
 * document's URL), and headers sent with every call (an auth header from `${ENV}`).
 *
 * @example
 * ```ts
 * OpenApiConfigSchema.parse({ spec: "./petstore.json", base_url: "https://petstore.example.com/v1", headers: { authorization: "Bearer t" } });
 * ```
 */
export const OpenApiConfigSchema = z.strictObject({
  spec: z.string({ error: "is required: a file path or an http(s) URL of an OpenAPI 3 document" }).min(1),
  base_url: z.url({ protocol: /^https?$/, error: "must be an http or https URL" }).optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** Response bodies longer than this are cut (the model is told). Default 100 000 characters. */
  max_response_chars: z.number().int().min(100).max(5_000_000).optional(),
});

/**
 * A checked `openapi:` config.
 *
 * @example
 * ```ts
 * const config: OpenApiConfig = { spec: "https://api.example.com/openapi.json" };
 * ```
 */
export type OpenApiConfig = z.output<typeof OpenApiConfigSchema>;
