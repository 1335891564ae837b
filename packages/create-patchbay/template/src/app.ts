// The whole app: the Patchbay server with agents/assistant.yaml, a dispatch worker hosting your
// tools, and a small web server for the page (public/index.html + src/page.ts) and its token
// endpoint. src/main.ts starts it; test/app.test.ts starts it on free ports.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { createModel, defaultModelFromEnv } from "@patchbay/models";
import { createServer, type LogLevel } from "@patchbay/server";
import { build } from "esbuild";
import { tools } from "./tools.js";

const root = join(import.meta.dirname, "..");

export interface AppOptions {
  /** Port of the Patchbay server; 0 picks a free one. */
  patchbayPort?: number;
  /** Port of the page; 0 picks a free one. */
  pagePort?: number;
  dataDir?: string;
  env?: Record<string, string | undefined>;
  logLevel?: LogLevel;
}

export interface App {
  patchbayUrl: string;
  pageUrl: string;
  /** `scripted`, or the real model and where it is. */
  model: string;
  apiKey: string;
  secret: string;
  close(): Promise<void>;
}

export async function startApp(options: AppOptions = {}): Promise<App> {
  const env = options.env ?? process.env;
  // Development credentials, new on every start unless .env sets them (production must).
  const apiKey = env.PATCHBAY_API_KEY || `pk_dev_${randomBytes(6).toString("hex")}`;
  const secret = env.PATCHBAY_API_SECRET || randomBytes(32).toString("hex");
  const realModel = Boolean(env.OPENAI_API_KEY || env.ANTHROPIC_API_KEY);

  const pageServer = createHttpServer();
  await listen(pageServer, options.pagePort ?? 3000);
  const pageUrl = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;

  const patchbayPort = options.patchbayPort ?? 8787;
  const patchbay = await createServer({
    port: patchbayPort,
    dataDir: options.dataDir ?? join(root, ".patchbay-data"),
    configDir: root, // agents/*.yaml
    apiKey,
    secret,
    env,
    logLevel: options.logLevel ?? "warn",
    cors: { origins: [pageUrl] },
    createModel: (agent) => (realModel ? defaultModelFromEnv(env) : createModel(agent.model, env)),
  }).catch((error: unknown) => {
    pageServer.close();
    throw portTaken(error, patchbayPort, "PATCHBAY_PORT");
  });

  const backend = new Client({ baseUrl: patchbay.url, apiKey, secret });
  const agent = backend.agent("assistant");
  for (const tool of tools) agent.tools.register(tool);
  const dispatch = new Dispatch({ url: patchbay.url, apiKey, secret, capacity: 8 });
  dispatch.host(agent);
  const worker = dispatch.run();
  await new Promise<void>((resolve) => dispatch.once("ready", () => resolve()));

  const page = await build({
    entryPoints: [join(root, "src", "page.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    logLevel: "warning",
  });
  const script = page.outputFiles[0]!.text;
  pageServer.on("request", (req, res) => {
    void handlePage(req, res, { script, backend, patchbayUrl: patchbay.url }).catch((error: unknown) => {
      patchbay.logger.warn("page request failed", { url: req.url, error });
      if (!res.headersSent) res.writeHead(500).end();
    });
  });

  const model = realModel
    ? `${env.OPENAI_API_KEY ? `openai ${env.OPENAI_MODEL ?? "gpt-4o-mini"} at ${env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"}` : `anthropic ${env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5"}`}`
    : "scripted (offline rules in agents/assistant.yaml)";

  return {
    patchbayUrl: patchbay.url,
    pageUrl,
    model,
    apiKey,
    secret,
    close: async () => {
      await new Promise<void>((resolve) => pageServer.close(() => resolve()));
      pageServer.closeAllConnections();
      await dispatch.stop({ timeoutMs: 5_000 });
      await worker;
      backend.close();
      await patchbay.close();
    },
  };
}

async function handlePage(
  req: IncomingMessage,
  res: ServerResponse,
  context: { script: string; backend: Client; patchbayUrl: string },
): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (path === "/" || path === "/index.html") {
    const html = await readFile(join(root, "public", "index.html"), "utf8");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
  } else if (path === "/page.js") {
    res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(context.script);
  } else if (path === "/api/token" && req.method === "POST") {
    // A real app takes the user from its own login; here every visitor is the same demo user.
    const userId = "demo-user";
    const token = await context.backend.createUserToken(userId, { expiresIn: "15m" });
    res
      .writeHead(200, { "content-type": "application/json", "cache-control": "no-store" })
      .end(JSON.stringify({ user: { id: userId }, token, patchbayUrl: context.patchbayUrl }));
  } else {
    res.writeHead(404).end();
  }
}

/** A port in use, and the setting of .env that moves it; src/main.ts prints only its message. */
export class PortTakenError extends Error {
  readonly port: number;
  /** The setting of .env that chooses this port. */
  readonly setting: "PORT" | "PATCHBAY_PORT";
  constructor(port: number, setting: "PORT" | "PATCHBAY_PORT") {
    super(`port ${port} is taken: set ${setting} in .env to another one (or 0 for any free port)`);
    this.name = "PortTakenError";
    this.port = port;
    this.setting = setting;
  }
}

/** `error` as a {@link PortTakenError} when it is EADDRINUSE; any other error as it is. */
function portTaken(error: unknown, port: number, setting: PortTakenError["setting"]): unknown {
  return (error as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE"
    ? new PortTakenError(port, setting)
    : error;
}

function listen(server: ReturnType<typeof createHttpServer>, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", (error) => reject(portTaken(error, port, "PORT")));
    server.listen(port, "127.0.0.1", () => resolve());
  });
}
