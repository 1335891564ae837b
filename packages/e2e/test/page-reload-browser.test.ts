import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext } from "playwright-core";
import { build } from "vite";
import { afterAll, describe, expect, it } from "vitest";
import { launchChromium } from "../fixtures/chromium";
import { type StaticServer, serveStatic } from "../fixtures/static-server";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// docs/guides/tools-in-the-browser.md: a page call pending across a reload never runs twice. Real
// Chromium reloads a page (built with Vite from the client's browser entry) while its page tool
// runs; the resumed page gets the call again and must not run it a second time.

const browserDir = fileURLToPath(new URL("../browser/", import.meta.url));

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

describe("a page call pending across a reload, in Chromium", () => {
  it("is not run again by the reloaded page, and the model is told its outcome is unknown", async () => {
    server = await startTestServer({
      agents: {
        drafts: scriptedAgent([
          {
            match: "save",
            toolCalls: [{ tool: "save_draft", arguments: {} }],
            reply: "Saved: {result}",
            errorReply: "Not sure: {result}",
          },
        ]),
      },
    });
    const outDir = mkdtempSync(join(tmpdir(), "patchbay-page-"));
    temp.push(outDir);
    await build({ configFile: join(browserDir, "vite.config.ts"), build: { outDir } });
    pageServer = await serveStatic(outDir);
    const pageUrl = pageServer.url;
    context = await launchChromium();
    const page = context.pages()[0] ?? (await context.newPage());
    const query = new URLSearchParams({ server: server.url, user: "u_1", token: await server.token("u_1") });
    await page.goto(`${pageUrl}/reload.html?${query}`);
    await page.locator("#ready", { hasText: "ready" }).waitFor({ timeout: 10_000 });
    const sessionId = await page.locator("#session").textContent();

    await page.locator("#ask button").click();
    // The tool has started (its run is counted) and runs for 2 s: reload now.
    await expect.poll(() => page.evaluate(() => localStorage.getItem("runs")), { timeout: 10_000 }).toBe("1");
    await page.reload();
    await page.locator("#ready", { hasText: "ready" }).waitFor({ timeout: 10_000 });
    expect(await page.locator("#session").textContent()).toBe(sessionId);

    await page.locator("#reply", { hasText: "Not sure" }).waitFor({ timeout: 15_000 });
    expect(await page.locator("#reply").textContent()).toMatch(/was not run again/);
    // Give a second run the time it would take to show up.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await page.evaluate(() => localStorage.getItem("runs"))).toBe("1");
    const tool = page.locator('#conversation li[data-type="tool_call"]');
    expect(await tool.getAttribute("data-status")).toBe("failed");
    expect(Number(await tool.getAttribute("data-attempt"))).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
