import { describe, expect, it } from "vitest";
import { createLogger } from "./logger";

describe("logger", () => {
  it("writes one JSON line per entry with time, level name, msg, fields and the error's stack", () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "info", write: (line) => lines.push(line) });
    logger.debug("hidden");
    logger.child({ sessionId: "s_1" }).warn("tool failed", { callId: "c_1", error: new TypeError("boom") });
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]!);
    expect(entry).toMatchObject({ level: "warn", msg: "tool failed", sessionId: "s_1", callId: "c_1" });
    expect(new Date(entry.time).toISOString()).toBe(entry.time);
    expect(entry.error).toMatchObject({ type: "TypeError", message: "boom" });
    expect(entry.error.stack).toContain("logger.test.ts");
  });

  it("keeps an error's cause apart, so a message that already says it does not say it twice", () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", write: (line) => lines.push(line) });
    const cause = new TypeError("fetch failed", { cause: new Error("bad port") });
    logger.warn("model call failed", {
      error: new Error("openai: connection failed: fetch failed: bad port", { cause }),
    });
    const entry = JSON.parse(lines[0]!);
    expect(entry.error.message).toBe("openai: connection failed: fetch failed: bad port");
    expect(entry.error.cause).toMatchObject({
      type: "TypeError",
      message: "fetch failed",
      cause: { message: "bad port" },
    });
  });

  it("prints readable lines, not JSON, in the pretty format a terminal gets", () => {
    const lines: string[] = [];
    createLogger({ format: "pretty", write: (line) => lines.push(line) }).warn("port taken", { port: 8787 });
    const text = lines.join("\n");
    expect(text).toMatch(/WARN.*port taken/);
    expect(text).toContain("port: 8787");
    expect(() => JSON.parse(lines[0]!)).toThrow();
  });

  it("drops everything at silent", () => {
    const lines: string[] = [];
    createLogger({ level: "silent", write: (line) => lines.push(line) }).error("nothing");
    expect(lines).toEqual([]);
  });
});
