import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext } from "playwright-core";
import { build } from "vite";
import { afterAll, describe, expect, it } from "vitest";
import { launchChromium } from "../fixtures/chromium";
import { type StaticServer, serveStatic } from "../fixtures/static-server";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// A real browser (Debian's Chromium through playwright-core) runs a page built with Vite from
// the client's browser entry, served on 127.0.0.1, against a real server whose scripted model
// calls a page tool that needs approval.

const browserDir = fileURLToPath(new URL("../browser/", import.meta.url));
const resultsDir = fileURLToPath(new URL("../test-results/", import.meta.url));

let server: TestServer | undefined;
let pageServer: StaticServer | undefined;
let context: BrowserContext | undefined;
const temp: string[] = [];

afterAll(async () => {
  await context?.close();
  await pageServer?.close();
  await server?.close();
  for (const dir of temp) rmSync(dir, { recursive: true, force: true });
});

describe("the client in a real browser", () => {
  it("opens a session, shows the approval of a page tool, runs it once allowed, shows the reply, and delivers a page tool's image", async () => {
    server = await startTestServer({
      agents: {
        support: scriptedAgent([
          {
            match: "where am i",
            toolCalls: [{ tool: "get_location", arguments: { reason: "the weather" } }],
            reply: "You are at {result.latitude}, {result.longitude}.",
            errorReply: "I could not tell: {result}",
          },
          {
            match: "draw",
            toolCalls: [{ tool: "draw_dot", arguments: {} }],
            reply: "Here is {result}.",
            errorReply: "I could not draw: {result}",
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
    const pageUrl = pageServer.url;

    context = await launchChromium({
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

    // A page tool that returns an image: the client loads its image checks then, and the PNG
    // reaches the server sniffed and base64-encoded.
    await page.locator("#text").fill("Draw me something");
    await page.locator("#ask button").click();
    await page.locator("#reply[data-done=true]").waitFor({ timeout: 10_000 });
    expect(await page.locator("#reply").textContent()).toBe("Here is a dot.");
    expect(problems).toEqual([]);
    const after = (await (
      await fetch(`${server.url}/v1/sessions/${sessionId}`, { headers: server.backendHeaders() })
    ).json()) as {
      conversation: Array<{
        type: string;
        name?: string;
        status?: string;
        result?: { content: { images: Array<{ mimeType?: string; data?: string }> } };
      }>;
    };
    const drawn = after.conversation.find((item) => item.name === "draw_dot");
    expect(drawn).toMatchObject({ status: "completed", location: "page" });
    expect(drawn?.result?.content.images).toEqual([
      { type: "image", mimeType: "image/png", data: expect.stringMatching(/^iVBORw0KGgo/) },
    ]);
  }, 60_000);
});
