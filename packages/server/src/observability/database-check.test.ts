import { describe, expect, it } from "vitest";
import { DatabaseCheck } from "./database-check";
import { createLogger } from "./logger";

describe("DatabaseCheck", () => {
  it("is down from a failed or unanswered probe until one answers, logging each change once", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: "info", write: (line) => lines.push(JSON.parse(line)) });
    let answer: () => Promise<unknown> = async () => undefined;
    const check = new DatabaseCheck({
      probe: () => answer(),
      logger,
      message: "database status",
      timeoutMs: 50,
    });
    expect(await check.check()).toBe(true);
    answer = () => Promise.reject(new Error("connection refused"));
    expect(await check.check()).toBe(false);
    expect(check.status).toBe("down");
    answer = () => new Promise(() => {}); // a database that never answers
    expect(await check.check()).toBe(false);
    answer = async () => undefined;
    expect(await check.check()).toBe(true);
    expect(lines.map((line) => [line.level, line.database])).toEqual([
      ["warn", "down"],
      ["info", "up"],
    ]);
  });
});
