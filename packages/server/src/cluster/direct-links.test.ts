import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger, type Logger, silentLogger } from "../observability/logger";
import { type DirectAddress, type DirectLink, DirectLinks } from "./direct-links";

// Direct links on real loopback sockets: the handshake with the advertised token, frames both
// ways on one link, frames of any size, and the close every sender hears of.
const opened: DirectLinks[] = [];
const addresses = new Map<string, DirectAddress>();

async function node(nodeId: string, logger: Logger = silentLogger): Promise<DirectLinks> {
  const links = await DirectLinks.listen({
    nodeId,
    host: "127.0.0.1",
    port: 0,
    advertiseHost: "127.0.0.1",
    addressOf: (id) => addresses.get(id),
    logger,
  });
  addresses.set(nodeId, links.address);
  opened.push(links);
  return links;
}

/** The next frame on `channel`. */
const nextFrame = (links: DirectLinks, channel: string) =>
  new Promise<{ data: string; from: string }>((resolve) => {
    const stop = links.on(channel, (data, link) => {
      stop();
      resolve({ data, from: link.node });
    });
  });

const nextClose = (links: DirectLinks) =>
  new Promise<DirectLink>((resolve) => {
    const stop = links.onClose((link) => {
      stop();
      resolve(link);
    });
  });

afterEach(async () => {
  await Promise.all(opened.splice(0).map((links) => links.close()));
  addresses.clear();
});

describe("DirectLinks", () => {
  it("sends over the bus until a link is open, then both ways on the one link", async () => {
    const a = await node("n_a");
    const b = await node("n_b");
    // No link yet: the caller uses the bus, and a link is being opened for the next message.
    expect(a.send("n_b", "hosted", '{"n":0}')).toBeUndefined();
    const link = await a.connect("n_b");
    expect(link?.node).toBe("n_b");
    const toB = nextFrame(b, "hosted");
    expect(a.send("n_b", "hosted", '{"n":1}')).toBe(link);
    expect(await toB).toEqual({ data: '{"n":1}', from: "n_a" });
    // n_b answers on the link n_a opened: no second connection.
    const toA = nextFrame(a, "back");
    expect(b.send("n_a", "back", '{"n":2}')).toBeDefined();
    expect(await toA).toEqual({ data: '{"n":2}', from: "n_b" });
    expect([a.count, b.count]).toEqual([1, 1]);
  });

  it("carries a frame of several MB whole, and frames in order", async () => {
    const a = await node("n_a");
    const b = await node("n_b");
    await a.connect("n_b");
    const big = JSON.stringify({ text: "é".repeat(1_500_000) });
    const got: string[] = [];
    const all = new Promise<void>((resolve) => {
      b.on("hosted", (data) => {
        got.push(data);
        if (got.length === 3) resolve();
      });
    });
    a.send("n_b", "hosted", '"first"');
    a.send("n_b", "hosted", big);
    a.send("n_b", "hosted", '"last"');
    await all;
    expect(got[0]).toBe('"first"');
    expect(got[1] === big).toBe(true);
    expect(got[2]).toBe('"last"');
  });

  it("refuses a connection that does not say the node's token, and logs it", async () => {
    const lines: string[] = [];
    let refused!: () => void;
    const warned = new Promise<void>((resolve) => {
      refused = resolve;
    });
    const logger = createLogger({
      level: "warn",
      write: (line) => {
        lines.push(line);
        if (line.includes("refused")) refused();
      },
    });
    const b = await node("n_b", logger);
    const a = await node("n_a");
    addresses.set("n_b", { ...b.address, token: "not-the-token" });
    expect(await a.connect("n_b")).toBeUndefined();
    await warned;
    expect(a.send("n_b", "hosted", "{}")).toBeUndefined();
    expect([a.count, b.count]).toEqual([0, 0]);
    expect(lines.join("\n")).not.toContain(b.address.token);
  });

  it("closes a connection whose hello is not a line of JSON within 4 KiB", async () => {
    const b = await node("n_b");
    const socket = net.connect({ host: "127.0.0.1", port: b.address.port });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => {});
    socket.write("x".repeat(10_000));
    await closed;
    expect(b.count).toBe(0);
  });

  it("tells both sides when a link closes, and opens a new one for the next message", async () => {
    const a = await node("n_a");
    const b = await node("n_b");
    const first = await a.connect("n_b");
    const [closedA, closedB] = [nextClose(a), nextClose(b)];
    a.drop("n_b");
    expect((await closedA) === first).toBe(true);
    expect((await closedB).node).toBe("n_a");
    expect(a.send("n_b", "hosted", "{}")).toBeUndefined();
    const second = await a.connect("n_b");
    expect(second).toBeDefined();
    expect(second === first).toBe(false);
    expect(a.send("n_b", "hosted", "{}")).toBe(second);
  });

  it("answers undefined for a node that advertises no address, or whose port is closed", async () => {
    const a = await node("n_a");
    expect(await a.connect("n_x")).toBeUndefined();
    const gone = await node("n_gone");
    await gone.close();
    expect(await a.connect("n_gone")).toBeUndefined();
    // Not tried again at once after a failure: the bus carries meanwhile.
    expect(await a.connect("n_gone")).toBeUndefined();
  });
});
