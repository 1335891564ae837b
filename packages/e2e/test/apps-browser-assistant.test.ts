import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@patchbay/client";
import {
  type CreateServerOptions,
  createDispatch,
  createServer,
  type PatchbayServer,
  silentLogger,
} from "@patchbay/server";
import type { BrowserContext, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAssistantConfigDir, servePage } from "../../../apps/browser-assistant/backend/index";
import { createFlightWorker, type FlightWorker } from "../../../apps/flight-booking/src/index";
import { launchChromium } from "../fixtures/chromium";

// The browser-assistant sample (React, @patchbay/react) as a person meets it: the real Patchbay
// server, the flight worker, the page built with Vite and served with its token endpoint, in
// Debian's Chromium (headless, where geolocation is unavailable, so the page shares its fixed
// fallback position). Every step leaves a screenshot in test-results/browser-assistant/.

const shotsDir = fileURLToPath(new URL("../../../test-results/browser-assistant/", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "patchbay-assistant-"));
const apiKey = "pk_test_assistant";
const secret = `secret-${Date.now()}-${Math.random()}`;

let serverOptions: CreateServerOptions;
let patchbay: PatchbayServer | undefined;
let worker: FlightWorker | undefined;
let backend: Client | undefined;
let pageServer: { url: string; close(): Promise<void> } | undefined;
let context: BrowserContext | undefined;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  // Built into a directory of its own, so a build of the app's dist/ running meanwhile is untouched.
  const outDir = join(root, "page");
  await build({ root: browserAssistantConfigDir, logLevel: "warn", build: { outDir, emptyOutDir: true } });
  serverOptions = {
    port: 0,
    host: "127.0.0.1",
    dataDir: join(root, "data"),
    configDir: browserAssistantConfigDir,
    apiKey,
    secret,
    // The scripted model of agents/assistant.yaml, whatever keys the machine has; the two
    // variables its memory connector (the MCP memory server from npm) reads.
    env: {
      BROWSER_ASSISTANT_DIR: browserAssistantConfigDir,
      PATCHBAY_MEMORY_FILE: join(root, "memory.json"),
    },
    logger: silentLogger,
    progressIntervalMs: 20,
    shutdownGraceMs: 500,
    dispatch: createDispatch,
  };
  patchbay = await createServer(serverOptions);
  worker = createFlightWorker({
    url: patchbay.url,
    apiKey,
    secret,
    bookingsFile: join(root, "bookings.sqlite"),
    agents: ["assistant"],
  });
  await worker.start();
  backend = new Client({ baseUrl: patchbay.url, apiKey, secret });
  pageServer = await servePage({ patchbayUrl: patchbay.url, client: backend, built: true, outDir, port: 0 });
  mkdirSync(shotsDir, { recursive: true });

  context = await launchChromium({ viewport: { width: 900, height: 700 } });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (error) => pageErrors.push(error.message));
});

afterAll(async () => {
  await context?.close();
  await pageServer?.close();
  backend?.close();
  await worker?.stop();
  await patchbay?.close();
  rmSync(root, { recursive: true, force: true });
});

const input = () => page.getByLabel("Message");
const sendButton = () => page.getByRole("button", { name: "Send" });
const stopButton = () => page.getByRole("button", { name: "Stop" });
const assistantMessages = () => page.locator('[data-testid="message-assistant"]');
const toolCalls = () => page.locator('[data-testid="tool-call"]');
const shot = (name: string) => page.screenshot({ path: join(shotsDir, `${name}.png`) });

async function send(text: string): Promise<void> {
  await input().fill(text);
  await sendButton().click();
}

async function ready(): Promise<void> {
  await page.locator("body[data-ready=true]").waitFor({ timeout: 15_000 });
}

describe("the browser-assistant sample in Chromium", () => {
  it("runs a page tool, with Send and Stop enabled only when they do something", async () => {
    await page.goto(pageServer!.url);
    await ready();
    // Product text only: a title and one button in the header, a favicon.
    expect(await page.locator("header").textContent()).toBe("Browser assistantNew conversation");
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toBe("/favicon.svg");
    expect((await page.request.get(`${pageServer!.url}/favicon.svg`)).status()).toBe(200);
    expect(await sendButton().isDisabled()).toBe(true);
    expect(await stopButton().isDisabled()).toBe(true);
    await input().fill("what time is it?");
    expect(await sendButton().isDisabled()).toBe(false);
    await sendButton().click();
    expect(await input().inputValue()).toBe("");
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toMatch(/^It is .+ in .+\.$/);
    expect(await toolCalls().first().getAttribute("data-status")).toBe("completed");
    expect(await toolCalls().first().textContent()).toContain("Reading your local time");
    expect(await stopButton().isDisabled()).toBe(true);
    await shot("01-page-tool");
  }, 60_000);

  it("asks before sharing the location: allowed runs the page tool", async () => {
    await send("Where am I?");
    const approval = page.locator('[data-testid="approval"]');
    await approval.waitFor({ timeout: 10_000 });
    expect(await approval.locator(".pb-approval-title").textContent()).toBe("Share your location?");
    expect(await approval.locator(".pb-approval-reason").textContent()).toBe("to tell you where you are");
    expect(await approval.locator("button").allTextContents()).toEqual(["Share", "Not now"]);
    expect(await stopButton().isDisabled()).toBe(false);
    await shot("02-approval-asked");

    await page.getByRole("button", { name: "Share" }).click();
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toBe("You are at 52.3676, 4.9041 (position from the fallback).");
    expect(await page.locator('[data-testid="notice"]').first().textContent()).toBe(
      "Your browser did not share a position, so a fixed one was used: Amsterdam.",
    );
    expect(await approval.count()).toBe(0);
    await shot("03-approval-allowed");
  }, 60_000);

  it("asks before sharing the location: declined never runs it, and the reply says so", async () => {
    await send("where am I now?");
    await page.getByRole("button", { name: "Not now" }).click();
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toMatch(/^Without your location I cannot say where you are/);
    expect(await toolCalls().last().getAttribute("data-status")).toBe("declined");
    expect(await toolCalls().last().textContent()).toContain("declined");
    await shot("04-approval-declined");
  }, 60_000);

  it("stops a long search with Stop, and says the reply was stopped", async () => {
    await send("find cafés near me");
    await expect
      .poll(() => toolCalls().last().textContent(), { timeout: 10_000 })
      .toMatch(/Searching places near you\s*running\s*Looking for cafés: source \d of 8/);
    expect(await stopButton().isDisabled()).toBe(false);
    await shot("05-searching");
    await stopButton().click();
    await expect
      .poll(() => toolCalls().last().getAttribute("data-status"), { timeout: 10_000 })
      .toBe("cancelled");
    await expect
      .poll(() => page.locator('[data-testid="interrupted"]').last().textContent(), { timeout: 10_000 })
      .toBe("You stopped this reply.");
    await expect.poll(() => stopButton().isDisabled()).toBe(true);
    expect(await toolCalls().last().textContent()).toContain("stopped");
    await shot("06-stopped");
  }, 60_000);

  it("says an earlier reply was interrupted when a message is sent during it", async () => {
    await send("find museums");
    await expect
      .poll(() => toolCalls().last().textContent(), { timeout: 10_000 })
      .toContain("Looking for museums");
    const replies = await assistantMessages().count();
    await send("what time is it?");
    await expect
      .poll(() => page.locator('[data-testid="interrupted"]').last().textContent(), { timeout: 10_000 })
      .toBe("Interrupted by your next message.");
    await expect.poll(() => assistantMessages().count(), { timeout: 10_000 }).toBeGreaterThan(replies);
    // The reply streams in: its first words may be all there is when it appears.
    await expect.poll(() => assistantMessages().last().textContent(), { timeout: 10_000 }).toMatch(/^It is /);
    await shot("07-interrupted-by-next-message");
  }, 60_000);

  it("resumes after a reload with the approval still waiting", async () => {
    const sessionId = await page.locator("body").getAttribute("data-session");
    await send("where am I, please?");
    await page.locator('[data-testid="approval"]').waitFor({ timeout: 10_000 });
    await page.reload();
    await ready();
    expect(await page.locator("body").getAttribute("data-session")).toBe(sessionId);
    await page.locator('[data-testid="approval"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="message-user"]').last().textContent()).toBe(
      "where am I, please?",
    );
    await shot("08-reloaded-approval-waiting");
    // The replies stopped before the reload keep a note, without guessing how they were stopped.
    expect(await page.locator('[data-testid="interrupted"]').allTextContents()).toEqual([
      "This reply was interrupted.",
      "This reply was interrupted.",
    ]);
    await page.getByRole("button", { name: "Share" }).click();
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toBe("You are at 52.3676, 4.9041 (position from the fallback).");
    await shot("09-reloaded-approval-allowed");
  }, 60_000);

  it("keeps a message sent while the server is down as pending, and delivers it after the restart", async () => {
    const port = patchbay!.port;
    const replies = await assistantMessages().count();
    await patchbay!.close();
    patchbay = undefined;
    await page.locator('[data-testid="offline"]').waitFor({ timeout: 10_000 });
    await send("what time is it now?");
    const pending = page.locator('[data-testid="message-pending"]');
    await pending.waitFor({ timeout: 5_000 });
    expect(await pending.textContent()).toContain("what time is it now?");
    expect(await pending.textContent()).toContain("Sending…");
    await shot("10-offline-pending");

    patchbay = await createServer({ ...serverOptions, port });
    await page.locator('[data-testid="offline"]').waitFor({ state: "detached", timeout: 20_000 });
    await expect.poll(() => assistantMessages().count(), { timeout: 20_000 }).toBe(replies + 1);
    await expect.poll(() => assistantMessages().last().textContent(), { timeout: 10_000 }).toMatch(/^It is /);
    expect(await pending.count()).toBe(0);
    expect(await page.locator('[data-testid="message-user"]').last().textContent()).toBe(
      "what time is it now?",
    );
    await shot("11-delivered-after-restart");

    // Only product words on the screen: no ids, JSON or model-facing notes.
    const text = await page.locator("body").textContent();
    expect(text).not.toMatch(/undefined|\{|"|call_|Geolocation is unavailable|ClientError|Error:/);
    expect(pageErrors).toEqual([]);
  }, 90_000);
});
