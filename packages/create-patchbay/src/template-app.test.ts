// The template's own src/app.ts and src/main.ts, run in place against the repository's @patchbay
// sources: what a new project's `npm start` says when a port of its .env is taken.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

// The project's devDependency, not installed in the repository; a taken port stops startApp first.
vi.mock("esbuild", () => ({ build: vi.fn() }));

interface TemplateApp {
  startApp(options: {
    patchbayPort?: number;
    pagePort?: number;
    dataDir?: string;
    env?: Record<string, string | undefined>;
    logLevel?: "silent";
  }): Promise<{ close(): Promise<void> }>;
  PortTakenError: new (...args: never[]) => Error;
}
// By a computed path, so that this package's typecheck does not take in the template's imports.
const template = (file: string) => new URL(`../template/src/${file}`, import.meta.url).href;
const loadApp = () => import(/* @vite-ignore */ template("app.ts")) as Promise<TemplateApp>;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.restoreAllMocks();
});

/** A port another process holds, as when a second `npm start` runs. */
async function occupiedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

/** A port free now; the test listens on it again afterwards to see that it was released. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "create-patchbay-app-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("the template's app when a port is taken", () => {
  it("names PATCHBAY_PORT and .env for the Patchbay server's port, and releases the page's", async () => {
    const { startApp, PortTakenError } = await loadApp();
    const taken = await occupiedPort();
    const pagePort = await freePort();
    const started = startApp({
      patchbayPort: taken,
      pagePort,
      dataDir: dataDir(),
      env: {},
      logLevel: "silent",
    });
    cleanups.push(() => started.then((app) => app.close()).catch(() => {}));
    const error = await started.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).message).toBe(
      `port ${taken} is taken: set PATCHBAY_PORT in .env to another one (or 0 for any free port)`,
    );
    expect(error).toBeInstanceOf(PortTakenError);
    expect(await canListen(pagePort)).toBe(true);
  });

  it("names PORT and .env for the page's port, with the same error", async () => {
    const { startApp, PortTakenError } = await loadApp();
    const taken = await occupiedPort();
    const started = startApp({
      patchbayPort: 0,
      pagePort: taken,
      dataDir: dataDir(),
      env: {},
      logLevel: "silent",
    });
    cleanups.push(() => started.then((app) => app.close()).catch(() => {}));
    const error = await started.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).message).toBe(
      `port ${taken} is taken: set PORT in .env to another one (or 0 for any free port)`,
    );
    expect(error).toBeInstanceOf(PortTakenError);
  });

  it("npm start (src/main.ts) prints that one sentence, no stack, and exits with 1", async () => {
    // The page's port is the one taken: it is checked before the Patchbay server opens its data
    // directory, which src/main.ts keeps inside the template.
    const taken = await occupiedPort();
    const saved = { PORT: process.env.PORT, PATCHBAY_PORT: process.env.PATCHBAY_PORT };
    cleanups.push(() => {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });
    process.env.PORT = String(taken);
    process.env.PATCHBAY_PORT = "0";
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    class Exited extends Error {}
    const exit = vi.spyOn(process, "exit").mockImplementation(() => {
      throw new Exited();
    });
    await expect(import(/* @vite-ignore */ template("main.ts"))).rejects.toBeInstanceOf(Exited);
    expect(exit).toHaveBeenCalledWith(1);
    expect(printed.mock.calls).toEqual([
      [`port ${taken} is taken: set PORT in .env to another one (or 0 for any free port)`],
    ]);
  });
});
