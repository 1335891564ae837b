import { join } from "node:path";
import type { Client } from "@patchbay/client";
import { createServer as createViteServer, type InlineConfig, type Plugin, preview } from "vite";
import { tokenEndpoint } from "./token-endpoint";

export const appDir = join(import.meta.dirname, "..");

export interface ServePageOptions {
  /** The Patchbay server the page's session socket is forwarded to. */
  patchbayUrl: string;
  /** A backend client (API key and secret) that mints user tokens. */
  client: Client;
  /** Serve the built page (after `vite build`) instead of running Vite's dev server. */
  built?: boolean;
  /** Where the built page is. Default `dist/` of this app. */
  outDir?: string;
  host?: string;
  /** 0 picks a free port. Default 5173. */
  port?: number;
}

/**
 * Serves the page on one origin with what it needs next to it: `/api/token` (this backend) and
 * `/v1` (HTTP and the WebSocket, forwarded to Patchbay), so the browser needs no CORS.
 */
export async function servePage(options: ServePageOptions): Promise<{ url: string; close(): Promise<void> }> {
  const handleToken = tokenEndpoint(options.client);
  const api: Plugin = {
    name: "assistant-token-endpoint",
    configureServer: (server) =>
      void server.middlewares.use("/api/token", (req, res) => void handleToken(req, res)),
    configurePreviewServer: (server) =>
      void server.middlewares.use("/api/token", (req, res) => void handleToken(req, res)),
  };
  const http = {
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 5173,
    strictPort: false,
    proxy: { "/v1": { target: options.patchbayUrl, ws: true } },
  };
  const config: InlineConfig = {
    root: appDir,
    logLevel: "warn",
    plugins: [api],
    server: http,
    preview: http,
    ...(options.outDir === undefined ? {} : { build: { outDir: options.outDir } }),
  };

  if (options.built) {
    const server = await preview(config);
    return { url: localUrl(server.resolvedUrls?.local), close: () => server.close() };
  }
  const server = await createViteServer(config);
  await server.listen();
  return { url: localUrl(server.resolvedUrls?.local), close: () => server.close() };
}

function localUrl(urls: string[] | undefined): string {
  const url = urls?.[0];
  if (!url) throw new Error("vite did not report the address it listens on");
  return url.replace(/\/$/, "");
}
