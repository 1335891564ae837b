import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "./data-dir-lock";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-lock-"));
  dirs.push(dir);
  return dir;
}

describe("lockDataDir", () => {
  it("refuses a second holder naming the first one's pid, host and start, and frees on release", () => {
    const dir = tempDir();
    const release = lockDataDir(dir);
    const holder = JSON.parse(readFileSync(join(dir, "patchbay.lock"), "utf8"));
    expect(holder).toMatchObject({ pid: process.pid, host: hostname() });
    let refused: unknown;
    try {
      lockDataDir(dir);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as Error).message).toContain(
      `pid ${process.pid} on ${hostname()}, since ${holder.since}`,
    );
    release();
    expect(existsSync(join(dir, "patchbay.lock"))).toBe(false);
    lockDataDir(dir)();
  });

  it("takes over a lock whose process is gone, and refuses one a live process holds", async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 20000)"], { stdio: "ignore" });
    const lock = join(dir, "patchbay.lock");
    writeFileSync(
      lock,
      JSON.stringify({ pid: child.pid, host: hostname(), since: "2026-01-01T00:00:00.000Z" }),
    );
    expect(() => lockDataDir(dir)).toThrow(`pid ${child.pid}`);
    const gone = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await gone;
    const release = lockDataDir(dir);
    expect(JSON.parse(readFileSync(lock, "utf8")).pid).toBe(process.pid);
    release();
  });
});
