import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusTimeoutError, ServerError } from "../errors";
import { startTestNats, type TestNats } from "../testing/nats-server";
import { type Bus, type BusStatus, subjectMatches } from "./bus";
import { MemoryBusHub } from "./memory-bus";
import { NatsBus, natsCredentials, redactNatsUrl } from "./nats-bus";

// Every bus keeps the same contract: the in-process one and NATS (a real nats-server on
// 127.0.0.1, started for this file).
let nats: TestNats;
beforeAll(async () => {
  nats = await startTestNats();
}, 20_000);
afterAll(async () => {
  await nats?.stop();
});

let prefixes = 0;
const prefix = () => `t${process.pid}x${++prefixes}`;

function until<T>(read: () => T | undefined, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = () => {
      const value = read();
      if (value !== undefined) resolve(value);
      else if (Date.now() > deadline) reject(new Error("condition not met in time"));
      else setTimeout(check, 10);
    };
    check();
  });
}

function describeBusContract(name: string, pair: () => Promise<[Bus, Bus]>): void {
  describe(`${name} keeps the bus contract`, () => {
    it("delivers to subscribers by subject, with * and > wildcards, and stops after unsubscribe", async () => {
      const [a, b] = await pair();
      const p = prefix();
      const got: string[] = [];
      const stopExact = b.subscribe(`${p}.node.n1`, (m) => got.push(`exact ${m.data}`));
      b.subscribe(`${p}.node.*`, (m) => got.push(`star ${m.subject.split(".").at(-1)}`));
      b.subscribe(`${p}.>`, (m) => got.push(`rest ${m.data}`));
      // The subscriptions reach the server before anything is published.
      await b.flush();
      a.publish(`${p}.node.n1`, "one");
      a.publish(`${p}.other.deep.x`, "two");
      await until(() => (got.length === 4 ? got : undefined));
      expect(got.sort()).toEqual(["exact one", "rest one", "rest two", "star n1"]);
      stopExact();
      got.length = 0;
      a.publish(`${p}.node.n2`, "three");
      await until(() => (got.length === 2 ? got : undefined));
      expect(got.sort()).toEqual(["rest three", "star n2"]);
      await a.close();
      await b.close();
    });

    it("answers a request once and times out with a typed error when nobody answers", async () => {
      const [a, b] = await pair();
      const p = prefix();
      b.subscribe(`${p}.echo`, (m) => m.reply(`echo ${m.data}`));
      b.subscribe(`${p}.echo`, (m) => m.reply(`second ${m.data}`));
      await b.flush();
      const answer = await a.request(`${p}.echo`, "hi", { timeoutMs: 2_000 });
      expect(answer === "echo hi" || answer === "second hi").toBe(true);
      const error = await a.request(`${p}.nobody`, "x", { timeoutMs: 150 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BusTimeoutError);
      expect((error as BusTimeoutError).code).toBe("bus_timeout");
      expect((error as Error).message).toContain(`${p}.nobody`);
      await a.close();
      await b.close();
      expect(a.status).toBe("closed");
    });

    it("carries messages, requests and answers larger than NATS' max_payload (1 MiB by default) whole", async () => {
      const [a, b] = await pair();
      const p = prefix();
      // 2.5 MiB of text whose multi-byte characters fall across chunk boundaries somewhere.
      const big = (n: number) => `{"text":"${"añ€😀".repeat(n)}"}`;
      const message = big(250_000);
      const got: string[] = [];
      b.subscribe(`${p}.big`, (m) => got.push(m.data));
      b.subscribe(`${p}.echo`, (m) => m.reply(`${m.data.length}:${big(300_000)}`));
      await b.flush();
      a.publish(`${p}.big`, "small before");
      a.publish(`${p}.big`, message);
      a.publish(`${p}.big`, "small after");
      await until(() => (got.length === 3 ? got : undefined), 10_000);
      expect(got[0]).toBe("small before");
      expect(got[1] === message).toBe(true);
      expect(got[2]).toBe("small after");
      const answer = await a.request(`${p}.echo`, message, { timeoutMs: 10_000 });
      expect(answer === `${message.length}:${big(300_000)}`).toBe(true);
      await a.close();
      await b.close();
    }, 20_000);

    it("fails a request at once when nothing subscribes (a dead node), and waits when something does but stays silent", async () => {
      const [a, b] = await pair();
      const p = prefix();
      b.subscribe(`${p}.silent`, () => {});
      await b.flush();
      let started = performance.now();
      await expect(a.request(`${p}.gone`, "x", { timeoutMs: 5_000 })).rejects.toMatchObject({
        name: "BusTimeoutError",
        noResponders: true,
        message: expect.stringContaining("no responders"),
      });
      expect(performance.now() - started).toBeLessThan(2_000);
      started = performance.now();
      await expect(a.request(`${p}.silent`, "x", { timeoutMs: 300 })).rejects.toMatchObject({
        name: "BusTimeoutError",
        noResponders: false,
      });
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
      await a.close();
      await b.close();
    });
  });
}

describeBusContract("MemoryBus", async () => {
  const hub = new MemoryBusHub();
  return [hub.connect(), hub.connect()];
});

describeBusContract("NatsBus", async () => [
  await NatsBus.connect({ url: nats.url }),
  await NatsBus.connect({ url: nats.url }),
]);

describe("NatsBus", () => {
  it("refuses a URL that is not nats:// with an error naming the option, without a password", async () => {
    const error = await NatsBus.connect({ url: "http://u:secret@x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).code).toBe("invalid_config");
    expect((error as Error).message).toContain("natsUrl");
    expect((error as Error).message).not.toContain("secret");
    expect(redactNatsUrl("nats://u:secret@127.0.0.1:4222")).toBe("nats://u:***@127.0.0.1:4222");
  });

  it("fails to connect with `unavailable` naming where, when no server listens", async () => {
    const error = await NatsBus.connect({ url: "nats://127.0.0.1:1", connectTimeoutMs: 500 }).catch(
      (e: unknown) => e,
    );
    expect((error as ServerError).code).toBe("unavailable");
    expect((error as Error).message).toContain("127.0.0.1:1");
  });

  it("connects with the user and password of the URL, and fails a wrong one naming where without the password", async () => {
    // A password with characters a URL must percent-encode.
    const own = await startTestNats({ args: ["--user", "pb", "--pass", "Nats@Pw:12/345"] });
    const port = new URL(own.url).port;
    const good = `nats://pb:${encodeURIComponent("Nats@Pw:12/345")}@127.0.0.1:${port}`;
    try {
      const [a, b] = [await NatsBus.connect({ url: good }), await NatsBus.connect({ url: good })];
      const p = prefix();
      b.subscribe(`${p}.auth`, (m) => m.reply(`hello ${m.data}`));
      await b.flush();
      expect(await a.request(`${p}.auth`, "pb", { timeoutMs: 2_000 })).toBe("hello pb");
      await a.close();
      await b.close();
      const wrong = `nats://pb:WrongSecret@127.0.0.1:${port}`;
      const error = await NatsBus.connect({ url: wrong, connectTimeoutMs: 2_000 }).catch((e: unknown) => e);
      expect((error as ServerError).code).toBe("unavailable");
      expect((error as Error).message).toContain(`nats://pb:***@127.0.0.1:${port}`);
      expect((error as Error).message).toMatch(/authorization/i);
      expect((error as Error).message).not.toContain("WrongSecret");
    } finally {
      await own.stop();
    }
  });

  it("connects with a token in the URL, and refuses URLs whose credentials differ naming the option", async () => {
    const own = await startTestNats({ args: ["--auth", "Tok3n"] });
    const port = new URL(own.url).port;
    try {
      // Several URLs: the credentials of the one that has some apply to all.
      const bus = await NatsBus.connect({ url: `nats://127.0.0.1:1, nats://Tok3n@127.0.0.1:${port}` });
      await bus.close();
      expect(natsCredentials(["nats://u:p%2Fq@h:1", "tls://h:2", "nats://u:p%2Fq@h:3"])).toEqual({
        servers: ["nats://h:1", "tls://h:2", "nats://h:3"],
        auth: { user: "u", pass: "p/q" },
      });
      const error = await NatsBus.connect({
        url: `nats://a:secret1@127.0.0.1:${port},nats://a:secret2@127.0.0.1:${port}`,
      }).catch((e: unknown) => e);
      expect((error as ServerError).code).toBe("invalid_config");
      expect((error as ServerError).path).toBe("natsUrl");
      expect((error as Error).message).toContain("natsUrl");
      expect((error as Error).message).not.toMatch(/secret/);
    } finally {
      await own.stop();
    }
  });

  it("says disconnected when the NATS server dies and connected again when it is back", async () => {
    const own = await startTestNats();
    const bus = await NatsBus.connect({ url: own.url });
    const seen: BusStatus[] = [];
    bus.onStatus((status) => seen.push(status));
    try {
      await own.kill();
      await until(() => (bus.status === "disconnected" ? true : undefined), 5_000);
      await own.restart();
      await until(() => (bus.status === "connected" ? true : undefined), 8_000);
      expect(seen).toEqual(["disconnected", "connected"]);
      // And it carries messages again.
      const p = prefix();
      bus.subscribe(`${p}.back`, (m) => m.reply("yes"));
      await bus.flush();
      expect(await bus.request(`${p}.back`, "", { timeoutMs: 2_000 })).toBe("yes");
    } finally {
      await bus.close();
      await own.stop();
    }
  }, 20_000);
});

describe("subjectMatches", () => {
  it("matches tokens, * for one token and > for one or more at the end", () => {
    expect(subjectMatches("a.b", "a.b")).toBe(true);
    expect(subjectMatches("a.*", "a.b")).toBe(true);
    expect(subjectMatches("a.*", "a.b.c")).toBe(false);
    expect(subjectMatches("a.>", "a.b.c")).toBe(true);
    expect(subjectMatches("a.>", "a")).toBe(false);
    expect(subjectMatches("a.b.c", "a.b")).toBe(false);
  });
});
