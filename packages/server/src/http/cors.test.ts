import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { PatchbayServer } from "../create-server";
import { ServerError } from "../errors";
import { startServerForTest } from "../testing/test-server";
import { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, type CorsOptions, parseCorsOrigins } from "./cors";

const PAGE = "http://localhost:5173";
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(cors?: CorsOptions, env: Record<string, string> = {}): Promise<PatchbayServer> {
  const { server, close } = await startServerForTest({ env, ...(cors ? { cors } : {}) });
  cleanups.push(close);
  return server;
}

function preflight(server: PatchbayServer, origin: string, path = "/v1/sessions/s_1") {
  return fetch(`${server.url}${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "DELETE",
      "access-control-request-headers": "authorization",
    },
  });
}

/** The status a WebSocket upgrade to `path` gets (101 when it opened). */
async function upgradeStatus(server: PatchbayServer, path: string, origin?: string): Promise<number> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}${path}`, origin ? { origin } : {});
  const status = await new Promise<number>((resolve, reject) => {
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("open", () => resolve(101));
    ws.once("error", reject);
  });
  ws.terminate();
  return status;
}

describe("parseCorsOrigins", () => {
  it("reads a comma-separated list, normalizes each origin, and takes * as any", () => {
    expect(parseCorsOrigins(" http://localhost:5173/ ,https://app.example.com,, ")).toEqual({
      origins: ["http://localhost:5173", "https://app.example.com"],
    });
    expect(parseCorsOrigins("http://a.example,*")).toEqual({ origins: "*" });
  });

  it("refuses an entry that is not an origin", () => {
    for (const bad of ["localhost:5173x", "https://app.example.com/path", "not a url"]) {
      expect(() => parseCorsOrigins(bad)).toThrow(ServerError);
    }
  });
});

describe("CORS on a real server", () => {
  it("is off by default: no access-control headers, and any Origin may open a socket", async () => {
    const server = await start();
    const res = await fetch(`${server.url}/healthz`, { headers: { origin: PAGE } });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight(server, PAGE)).headers.get("access-control-allow-origin")).toBeNull();
    expect(await upgradeStatus(server, "/v1/client", "https://elsewhere.example")).toBe(101);
  });

  it("answers an allowed origin's preflight with the methods and headers, and lets it read answers", async () => {
    const server = await start({ origins: [PAGE] });
    const pre = await preflight(server, PAGE);
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect(pre.headers.get("access-control-allow-methods")).toBe(CORS_ALLOWED_METHODS);
    expect(pre.headers.get("access-control-allow-headers")).toBe(CORS_ALLOWED_HEADERS);
    for (const header of ["authorization", "content-type", "x-api-key"]) {
      expect(CORS_ALLOWED_HEADERS.split(", ")).toContain(header);
    }
    // An actual request (here refused for want of a token) carries the header, so the page can
    // read the error; so do the inbound routes of the dispatch module.
    const get = await fetch(`${server.url}/v1/sessions/s_1`, { headers: { origin: PAGE } });
    expect(get.status).toBe(401);
    expect(get.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect(get.headers.get("vary")).toMatch(/origin/i);
    const inbound = await fetch(`${server.url}/v1/agents/support/inbound/calls`, {
      headers: { origin: PAGE },
    });
    expect(inbound.headers.get("access-control-allow-origin")).toBe(PAGE);
  });

  it("refuses another origin's preflight and socket, and leaves callers without an Origin alone", async () => {
    const server = await start({ origins: [PAGE] });
    const pre = await preflight(server, "https://evil.example");
    expect(pre.status).toBe(403);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    expect(await upgradeStatus(server, "/v1/client", "https://evil.example")).toBe(403);
    expect(await upgradeStatus(server, "/v1/worker", "https://evil.example")).toBe(403);
    expect(await upgradeStatus(server, "/v1/client", PAGE)).toBe(101);
    expect(await upgradeStatus(server, "/v1/client")).toBe(101);
    expect(await upgradeStatus(server, "/v1/worker")).toBe(101);
  });

  it("takes PATCHBAY_CORS_ORIGINS when no option is given, * answering any origin", async () => {
    const server = await start(undefined, { PATCHBAY_CORS_ORIGINS: "*" });
    const pre = await preflight(server, "https://anywhere.example");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
  });
});
