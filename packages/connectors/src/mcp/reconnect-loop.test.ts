import { describe, expect, it } from "vitest";
import { type Closable, ReconnectLoop, type ReconnectOptions } from "./reconnect-loop";

class Connection implements Closable {
  closed = false;
  constructor(readonly id: number) {}
  async close(): Promise<void> {
    this.closed = true;
  }
}

/** A loop whose `open` fails `failures` times, then opens connections 1, 2, ... */
function loop(failures: number, options: Partial<ReconnectOptions<Connection>> = {}) {
  const events: string[] = [];
  let opened = 0;
  let failed = 0;
  const reconnect = new ReconnectLoop<Connection>({
    firstWaitMs: 10,
    maxWaitMs: 25,
    open: async () => {
      if (failed < failures) {
        failed += 1;
        throw new Error(`refused ${failed}`);
      }
      return new Connection(++opened);
    },
    opened: (connection) => events.push(`opened ${connection.id}`),
    failed: (error) => events.push(`failed: ${(error as Error).message}`),
    waiting: (attempt, inMs) => events.push(`wait ${attempt} ${inMs}`),
    ...options,
  });
  return { reconnect, events };
}

const until = async (check: () => boolean) => {
  const end = Date.now() + 2_000;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("ReconnectLoop", () => {
  it("tries at once when asked, and closes the lost connection once that try settled", async () => {
    const { reconnect, events } = loop(0);
    const lost = new Connection(0);
    const first = reconnect.start(lost, true);
    expect(reconnect.firstTry).toBe(first);
    expect(lost.closed).toBe(false);
    expect((await first)?.id).toBe(1);
    await until(() => lost.closed);
    expect(events).toEqual(["opened 1"]);
    expect(reconnect.firstTry).toBeUndefined();
  });

  it("waits the backoff, doubling it up to the longest wait, until a try opens; then starts over", async () => {
    const { reconnect, events } = loop(3);
    expect(await reconnect.start(new Connection(0), false)).toBeUndefined();
    await until(() => events.includes("opened 1"));
    expect(events).toEqual([
      "wait 1 10",
      "failed: refused 1",
      "wait 2 20",
      "failed: refused 2",
      "wait 3 25",
      "failed: refused 3",
      "wait 4 25",
      "opened 1",
    ]);
    await reconnect.start(new Connection(1), false);
    expect(events.slice(-2)).toEqual(["wait 1 10", "opened 2"]);
  });

  it("stops trying when closed, and closes the lost connection it kept", async () => {
    const { reconnect, events } = loop(Number.POSITIVE_INFINITY);
    const lost = new Connection(0);
    const first = reconnect.start(lost, false);
    await reconnect.close();
    expect(await first).toBeUndefined();
    expect(lost.closed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(events).toEqual(["wait 1 10"]);
  });
});
