import { randomBytes, timingSafeEqual } from "node:crypto";
import net from "node:net";
import type { Logger } from "../observability/logger";

// Direct links between nodes (docs/cluster.md, "Direct links"): a persistent TCP connection from
// one node to another that carries hosted calls and their answers without a trip through
// nats-server. A node listens on its cluster port and advertises `{ host, port, token }` in its
// heartbeat; a node that wants to send to it connects, says `{ node, token }`, and the listener
// answers `ok` when the token is its own (only the bus's members hear it). Each frame is one line:
// the channel, a space, and the message's JSON (JSON.stringify never writes a raw newline); a
// line `p` every ping interval keeps an idle link known to be alive, and a link on which nothing
// arrived for two intervals is closed (a peer gone without a FIN, a partition). A link is a fast
// path only: whatever goes on one is something the caller may send again over the bus when the
// link closes (its `onClose` listeners say which link went).

/**
 * Where a node takes direct links, as its heartbeat advertises it.
 *
 * @example
 * ```ts
 * const address: DirectAddress = { host: "10.0.0.11", port: 8901, token: "..." };
 * ```
 */
export interface DirectAddress {
  host: string;
  port: number;
  /** A random token of the node's process, said by whoever connects (only bus members hear it). */
  token: string;
}

/** Options of {@link DirectLinks.listen}. */
export interface DirectLinksOptions {
  nodeId: string;
  /** The interface to listen on (the server's host by default). */
  host: string;
  /** The port to listen on; 0 picks a free one. */
  port: number;
  /** The host other nodes connect to (the listen host unless it is a wildcard). */
  advertiseHost: string;
  /** Another node's advertised address (its last heartbeat), or undefined. */
  addressOf: (nodeId: string) => DirectAddress | undefined;
  logger: Logger;
  /** Called with the number of open links whenever it changes (a metric). */
  onCount?: (open: number) => void;
  /** How often each link says it is alive (default 2 000 ms); silent for two of these, it is closed. */
  pingIntervalMs?: number;
}

/** The hello a connecting node sends may not exceed this. */
const MAX_HELLO_BYTES = 4096;
/** A frame on an authenticated link may not exceed this (the bus's own limit for a message). */
const MAX_FRAME_BYTES = 64 * 1024 * 1024;
/** How long a connection may take to be accepted (both sides). */
const HANDSHAKE_MS = 2_000;
/** After a failed connect, sends to that node use the bus for this long before trying again. */
const RETRY_AFTER_MS = 1_000;

/**
 * One open, authenticated link to another node (see {@link DirectLinks}); frames on it arrive in
 * the order sent, and `open` turns false once it closed.
 *
 * @example
 * ```ts
 * if (link.open) link.send("hosted", JSON.stringify(message));
 * ```
 */
export class DirectLink {
  /** When something last arrived on it (`Date.now()`). */
  seenAt = Date.now();
  constructor(
    readonly node: string,
    private readonly socket: net.Socket,
  ) {}

  get open(): boolean {
    return !this.socket.destroyed && this.socket.writable;
  }

  send(channel: string, data: string): void {
    this.socket.write(`${channel} ${data}\n`);
  }

  ping(): void {
    this.socket.write("p\n");
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Splits a socket's text into lines, refusing any longer than `max`. */
function readLines(socket: net.Socket, max: () => number, onLine: (line: string) => void): void {
  let parts: string[] = [];
  let size = 0;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    let start = 0;
    for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", start)) {
      let line = chunk.slice(start, end);
      if (parts.length > 0) {
        parts.push(line);
        line = parts.join("");
        parts = [];
        size = 0;
      }
      start = end + 1;
      onLine(line);
      if (socket.destroyed) return;
    }
    if (start < chunk.length) {
      parts.push(chunk.slice(start));
      size += chunk.length - start;
      if (size > max()) socket.destroy();
    }
  });
}

function sameToken(given: unknown, own: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(own);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * This node's direct links: the listener other nodes connect to, and the links it opened or
 * accepted, by node. {@link send} uses an open link or answers `undefined` (the caller sends over
 * the bus) and starts connecting, so the next message to that node goes direct.
 *
 * @example
 * ```ts
 * const links = await DirectLinks.listen({ nodeId, host: "127.0.0.1", port: 0, advertiseHost: "127.0.0.1", addressOf, logger });
 * links.on("hosted", (data, from) => handle(JSON.parse(data), from));
 * links.send("n_c", "hosted", JSON.stringify(message)) ?? bus.publish(subject, JSON.stringify(message));
 * ```
 */
export class DirectLinks {
  readonly address: DirectAddress;
  private readonly links = new Map<string, Set<DirectLink>>();
  private readonly connecting = new Map<string, Promise<DirectLink | undefined>>();
  private readonly failedAt = new Map<string, number>();
  private readonly handlers = new Map<string, (data: string, link: DirectLink) => void>();
  private readonly closeListeners = new Set<(link: DirectLink) => void>();
  private readonly sockets = new Set<net.Socket>();
  private closed = false;
  private readonly timer: ReturnType<typeof setInterval>;

  private constructor(
    private readonly options: DirectLinksOptions,
    private readonly server: net.Server,
  ) {
    const port = (server.address() as net.AddressInfo).port;
    this.address = { host: options.advertiseHost, port, token: randomBytes(24).toString("base64url") };
    server.on("connection", (socket) => this.accept(socket));
    const interval = options.pingIntervalMs ?? 2_000;
    this.timer = setInterval(() => this.ping(2 * interval), interval);
    this.timer.unref();
  }

  /** Says each link is alive, and closes the ones nothing arrived on for `silentMs`. */
  private ping(silentMs: number): void {
    const cutoff = Date.now() - silentMs;
    for (const set of this.links.values())
      for (const link of set) {
        if (link.seenAt < cutoff) {
          this.options.logger.warn("a direct link went silent; closing it (its calls go over the bus)", {
            nodeId: this.options.nodeId,
            to: link.node,
          });
          link.close();
        } else link.ping();
      }
  }

  /** Listens on `host:port` and resolves once it does. */
  static async listen(options: DirectLinksOptions): Promise<DirectLinks> {
    const server = net.createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return new DirectLinks(options, server);
  }

  /** Calls `handler` for each frame on `channel` from any link, with the link it came on. */
  on(channel: string, handler: (data: string, link: DirectLink) => void): () => void {
    this.handlers.set(channel, handler);
    return () => this.handlers.delete(channel);
  }

  /** Calls `listener` when an open link closes (what was sent on it may not have arrived). */
  onClose(listener: (link: DirectLink) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /**
   * Sends on an open link to `node` and answers it; answers `undefined` when none is open (the
   * caller sends over the bus), and then connects when the node advertises an address.
   */
  send(node: string, channel: string, data: string): DirectLink | undefined {
    const open = this.links.get(node);
    if (open)
      for (const link of open)
        if (link.open) {
          link.send(channel, data);
          return link;
        }
    void this.connect(node);
    return undefined;
  }

  /** Open links, for the metric and tests. */
  get count(): number {
    let count = 0;
    for (const set of this.links.values()) count += set.size;
    return count;
  }

  /** Closes the links to one node (tests, a node given up on); its listeners hear of each. */
  drop(node: string): void {
    for (const link of this.links.get(node) ?? []) link.close();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.sockets.delete(socket));
  }

  /** A node connecting here: its hello, then frames. */
  private accept(socket: net.Socket): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.track(socket);
    socket.setTimeout(HANDSHAKE_MS, () => socket.destroy());
    let link: DirectLink | undefined;
    readLines(
      socket,
      () => (link ? MAX_FRAME_BYTES : MAX_HELLO_BYTES),
      (line) => {
        if (link) return this.frame(link, line);
        let hello: { node?: unknown; token?: unknown } | undefined;
        try {
          hello = JSON.parse(line) as typeof hello;
        } catch {
          hello = undefined;
        }
        if (typeof hello?.node !== "string" || !sameToken(hello.token, this.address.token)) {
          this.options.logger.warn("a direct link was refused: wrong or missing token", {
            nodeId: this.options.nodeId,
            remote: `${socket.remoteAddress}:${socket.remotePort}`,
          });
          socket.destroy();
          return;
        }
        socket.setTimeout(0);
        socket.write("ok\n");
        link = this.opened(hello.node, socket);
      },
    );
  }

  /**
   * Opens a link to `node` and resolves with it, or with undefined when the node advertises no
   * address or refuses (then not tried again within a second). One attempt at a time per node.
   */
  connect(node: string): Promise<DirectLink | undefined> {
    const pending = this.connecting.get(node);
    if (pending) return pending;
    const address = this.options.addressOf(node);
    const failed = this.failedAt.get(node);
    if (this.closed || !address || (failed !== undefined && Date.now() - failed < RETRY_AFTER_MS))
      return Promise.resolve(undefined);
    const attempt = new Promise<DirectLink | undefined>((resolve) => this.dial(node, address, resolve));
    this.connecting.set(node, attempt);
    return attempt;
  }

  private dial(node: string, address: DirectAddress, resolve: (link: DirectLink | undefined) => void): void {
    const socket = net.connect({ host: address.host, port: address.port, noDelay: true });
    this.track(socket);
    socket.setTimeout(HANDSHAKE_MS, () => socket.destroy());
    let link: DirectLink | undefined;
    socket.on("close", () => {
      if (link) return;
      this.connecting.delete(node);
      this.failedAt.set(node, Date.now());
      this.options.logger.debug("a direct link could not be opened; the bus carries its messages", {
        nodeId: this.options.nodeId,
        to: node,
      });
      resolve(undefined);
    });
    readLines(
      socket,
      () => (link ? MAX_FRAME_BYTES : MAX_HELLO_BYTES),
      (line) => {
        if (link) return this.frame(link, line);
        if (line !== "ok") {
          socket.destroy();
          return;
        }
        socket.setTimeout(0);
        this.connecting.delete(node);
        this.failedAt.delete(node);
        link = this.opened(node, socket);
        resolve(link);
      },
    );
    socket.write(`${JSON.stringify({ node: this.options.nodeId, token: address.token })}\n`);
  }

  private opened(node: string, socket: net.Socket): DirectLink {
    const link = new DirectLink(node, socket);
    let set = this.links.get(node);
    if (!set) {
      set = new Set();
      this.links.set(node, set);
    }
    set.add(link);
    this.options.onCount?.(this.count);
    socket.on("close", () => {
      set.delete(link);
      if (set.size === 0 && this.links.get(node) === set) this.links.delete(node);
      this.options.onCount?.(this.count);
      for (const listener of this.closeListeners) listener(link);
    });
    return link;
  }

  private frame(link: DirectLink, line: string): void {
    link.seenAt = Date.now();
    const space = line.indexOf(" ");
    const handler = space > 0 ? this.handlers.get(line.slice(0, space)) : undefined;
    if (!handler) return;
    try {
      handler(line.slice(space + 1), link);
    } catch (error) {
      this.options.logger.error("a direct link's message could not be handled", {
        nodeId: this.options.nodeId,
        from: link.node,
        error,
      });
    }
  }
}
