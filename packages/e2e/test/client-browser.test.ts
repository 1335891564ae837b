import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// A real browser (Debian's Chromium through playwright-core) runs a page built with Vite from
// the client's browser entry, served on 127.0.0.1, against a real server whose scripted model
// calls a page tool that needs approval.

const CHROMIUM = "/usr/bin/chromium";
const browserDir = fileURLToPath(new URL("../browser/", import.meta.url));
const resultsDir = fileURLToPath(new URL("../test-results/", import.meta.url));

let server: TestServer | undefined;
let pageServer: Server | undefined;
let context: BrowserContext | undefined;
const temp: string[] = [];

const types: Record<string, string> = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".map": "application/json",
  ".css": "text/css",
};

/** Serves the built page; nothing outside the build directory. */
function serveStatic(root: string): Promise<Server> {
  const http = createServer((req, res) => {
    const path = normalize(new URL(req.url ?? "/", "http://x").pathname).replace(/^(\.\.[/\\])+/, "");
    const file = join(root, path === "/" ? "index.html" : path);
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => http.listen(0, "127.0.0.1", () => resolve(http)));
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser test needs Chromium at ${CHROMIUM} (Debian: apt-get install chromium); it was not found.`,
    );
  }
});

afterAll(async () => {
  await context?.close();
  await new Promise<void>((resolve) => (pageServer ? pageServer.close(() => resolve()) : resolve()));
  await server?.close();
  for (const dir of temp) rmSync(dir, { recursive: true, force: true });
});

describe("the client in a real browser", () => {
  it("opens a session, shows the approval of a page tool, runs it once allowed, and shows the reply", async () => {
    server = await startTestServer({
      agents: {
        support: scriptedAgent([
          {
            match: "where am i",
            toolCalls: [{ tool: "get_location", arguments: { reason: "the weather" } }],
            reply: "You are at {result.latitude}, {result.longitude}.",
            errorReply: "I could not tell: {result}",
          },
        ]),
      },
    });
    const outDir = mkdtempSync(join(tmpdir(), "patchbay-page-"));
    temp.push(outDir);
    await build({ configFile: join(browserDir, "vite.config.ts"), build: { outDir } });
    const html = readFileSync(join(outDir, "index.html"), "utf8");
    expect(html).toMatch(/<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js">/);
    pageServer = await serveStatic(outDir);
    const pageUrl = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;

    const profile = mkdtempSync(join(tmpdir(), "patchbay-chromium-"));
    temp.push(profile);
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
      geolocation: { latitude: 52.52, longitude: 13.405 },
      permissions: ["geolocation"],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });

    const token = await server.token("u_browser");
    const query = new URLSearchParams({ server: server.url, user: "u_browser", token });
    await page.goto(`${pageUrl}/?${query}`);
    await page.locator("#state", { hasText: "open" }).waitFor({ timeout: 10_000 });
    const sessionId = await page.locator("#session").textContent();
    expect(sessionId).toMatch(/\S/);
    expect(sessionId).not.toBe("none");

    await page.locator("#ask button").click();
    const approval = page.locator(".approval");
    await approval.waitFor({ timeout: 10_000 });
    expect(await approval.locator("strong").textContent()).toBe("Share your location for the weather?");
    expect(await approval.locator("p").textContent()).toBe("the weather");
    expect(await approval.locator("button").allTextContents()).toEqual(["Share", "Not now"]);
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, "client-browser-approval.png") });
    await approval.getByRole("button", { name: "Share" }).click();

    await page.locator("#reply[data-done=true]").waitFor({ timeout: 10_000 });
    expect(await page.locator("#reply").textContent()).toBe("You are at 52.52, 13.405.");
    await expect.poll(() => page.locator(".approval").count(), { timeout: 5_000 }).toBe(0);
    const tool = page.locator('#conversation li[data-type="tool_call"]');
    expect(await tool.getAttribute("data-status")).toBe("completed");
    expect(await tool.textContent()).toContain("Checking where you are");
    expect(problems).toEqual([]);

    await page.screenshot({ path: join(resultsDir, "client-browser.png"), fullPage: true });

    // The server saw the same conversation the page shows.
    const response = await fetch(`${server.url}/v1/sessions/${sessionId}`, {
      headers: server.backendHeaders(),
    });
    const { session, conversation } = (await response.json()) as {
      session: { userId: string };
      conversation: Array<{ type: string; status?: string; location?: string }>;
    };
    expect(session.userId).toBe("u_browser");
    expect(conversation.find((item) => item.type === "tool_call")).toMatchObject({
      status: "completed",
      location: "page",
    });
  }, 60_000);
});
