import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { Dispatch } from "./dispatch";

async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("a worker that cannot connect", () => {
  it("names the URL and the reason of each failed attempt, with the backoff before the next", async () => {
    const port = await deadPort();
    const lines: string[] = [];
    const dispatch = new Dispatch({
      capacity: 1,
      url: `http://127.0.0.1:${port}`,
      apiKey: "k",
      secret: "s",
      backoff: { initialDelayMs: 20, maxDelayMs: 40 },
      logger: { warn: (msg) => lines.push(msg) },
    });
    dispatch.onMessage(() => undefined);
    const events: { attempt: number; url: string; reason: string; delayMs: number }[] = [];
    dispatch.on("reconnecting", (event) => events.push(event));
    const running = dispatch.run();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (events.length >= 2) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await dispatch.stop({ timeoutMs: 100 });
    await running.catch(() => undefined);
    const url = `ws://127.0.0.1:${port}/v1/worker`;
    expect(events[0]).toMatchObject({ attempt: 1, url, reason: "connection refused (ECONNREFUSED)" });
    expect(events[1]).toMatchObject({ attempt: 2, url, reason: "connection refused (ECONNREFUSED)" });
    expect(lines[0]).toMatch(
      new RegExp(
        `^cannot reach ${url}: connection refused \\(ECONNREFUSED\\); retrying in \\d+\\.\\d s \\(attempt 1\\)$`,
      ),
    );
  });
});
