import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@patchbay/client";
import { createDispatch, createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAssistantConfigDir, servePage } from "../../../apps/browser-assistant/backend/index";
import { createFlightWorker, type FlightWorker } from "../../../apps/flight-booking/src/index";

// The browser-assistant sample as a user meets it: the real Patchbay server, the flight worker,
// the page built with Vite and served with its token endpoint, in Debian's Chromium (headless,
// where geolocation is unavailable, so the page shares its fixed fallback position).

const CHROMIUM = process.env.PATCHBAY_CHROMIUM ?? "/usr/bin/chromium";
const resultsDir = fileURLToPath(new URL("../../../test-results/", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "patchbay-assistant-"));
const apiKey = "pk_test_assistant";
const secret = `secret-${Date.now()}-${Math.random()}`;

let patchbay: PatchbayServer | undefined;
let worker: FlightWorker | undefined;
let backend: Client | undefined;
let pageServer: { url: string; close(): Promise<void> } | undefined;
let context: BrowserContext | undefined;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`The browser test needs Chromium at ${CHROMIUM} (apt-get install chromium).`);
  // Built into a directory of its own, so a build of the app's dist/ running meanwhile is untouched.
  const outDir = join(root, "page");
  await build({ root: browserAssistantConfigDir, logLevel: "warn", build: { outDir, emptyOutDir: true } });
  patchbay = await createServer({
    port: 0,
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
    shutdownGraceMs: 1_000,
    dispatch: createDispatch,
  });
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

  context = await chromium.launchPersistentContext(join(root, "chromium-profile"), {
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
  });
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

async function send(text: string): Promise<void> {
  await page.locator("#input").fill(text);
  await page.locator("#composer button[type=submit]").click();
}

const assistantMessages = () => page.locator('[data-testid="message-assistant"]');

describe("the browser-assistant sample in Chromium", () => {
  it("asks before sharing the location, runs the page tool once allowed, and resumes after a reload", async () => {
    await page.goto(pageServer!.url);
    await page.locator("body[data-ready=true]").waitFor({ timeout: 15_000 });
    const sessionId = await page.locator("body").getAttribute("data-session");
    expect(sessionId).toBeTruthy();

    await send("Where am I?");
    const approval = page.locator('[data-testid="approval"]');
    await approval.waitFor({ timeout: 10_000 });
    await expect.poll(() => approval.locator(".question").textContent()).toBe("Share your location?");
    expect(await approval.locator(".reason").textContent()).toBe("Reason: to tell you where you are");
    expect(await approval.locator("button").allTextContents()).toEqual(["Share", "Not now"]);
    await expect
      .poll(() => page.locator('[data-testid="tool-step"]').first().textContent())
      .toBe("Checking where you arewaiting for your answer");
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, "browser-assistant-approval.png") });

    await page.locator('[data-testid="approval-allow"]').click();
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toBe("You are at 52.3676, 4.9041 (position from the fallback).");
    expect(await page.locator(".notice").first().textContent()).toContain("fixed position: Amsterdam");
    expect(await approval.count()).toBe(0);
    expect(await page.locator('[data-testid="tool-step"]').first().textContent()).toContain("done");

    // Declined: the tool never runs and the model is told.
    await send("where am I now?");
    await page.locator('[data-testid="approval-decline"]').click();
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toMatch(/^Without your location I cannot say where you are/);
    await expect.poll(() => page.locator(".step.declined").count()).toBe(1);

    // A reload opens the same session from sessionStorage and replays the conversation.
    await page.reload();
    await page.locator("body[data-ready=true]").waitFor({ timeout: 15_000 });
    expect(await page.locator("body").getAttribute("data-session")).toBe(sessionId);
    await expect
      .poll(() => page.locator('[data-testid="message-user"]').allTextContents())
      .toEqual(["Where am I?", "where am I now?"]);
    expect(await assistantMessages().first().textContent()).toBe(
      "You are at 52.3676, 4.9041 (position from the fallback).",
    );
    expect(pageErrors).toEqual([]);
  });

  it("shows a hosted tool's image result as a tool step", async () => {
    await send("seat map for LH400");
    const image = page.locator('[data-testid="tool-step"] img');
    await image.waitFor({ timeout: 10_000 });
    expect(await image.getAttribute("src")).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    // The PNG decodes: the browser knows its size.
    expect(await image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(50);
    await expect
      .poll(() => assistantMessages().last().textContent(), { timeout: 10_000 })
      .toMatch(/^Seat map of LH400: \d+ of 72 seats free/);
  });
});
