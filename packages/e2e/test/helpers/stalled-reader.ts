import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

/**
 * A WebSocket client over a plain TCP socket that stops reading when told to: the slow reader a
 * server must cut off. (`ws` resumes its own socket, so pausing it does not stall it.)
 */
export class StalledReader {
  private constructor(
    private readonly socket: Socket,
    private readonly closed: Promise<void>,
  ) {}

  static async connect(wsUrl: string): Promise<StalledReader> {
    const url = new URL(wsUrl);
    const socket = connect(Number(url.port), url.hostname);
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", reject);
    });
    socket.write(
      [
        `GET ${url.pathname} HTTP/1.1`,
        `Host: ${url.host}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
        "Sec-WebSocket-Version: 13",
        "",
        "",
      ].join("\r\n"),
    );
    await new Promise<void>((resolve, reject) => {
      let head = "";
      const onData = (chunk: Buffer) => {
        head += chunk.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        socket.off("data", onData);
        if (head.startsWith("HTTP/1.1 101")) resolve();
        else reject(new Error(`upgrade refused: ${head.split("\r\n")[0]}`));
      };
      socket.on("data", onData);
    });
    return new StalledReader(socket, closed);
  }

  /** Sends one masked text frame, as a client must. */
  send(frame: unknown): void {
    const payload = Buffer.from(JSON.stringify(frame));
    const mask = randomBytes(4);
    let header: Buffer;
    if (payload.length < 126) {
      header = Buffer.from([0x81, 0x80 | payload.length]);
    } else if (payload.length < 65_536) {
      header = Buffer.alloc(4);
      header[0] = 0x81;
      header[1] = 0x80 | 126;
      header.writeUInt16BE(payload.length, 2);
    } else {
      header = Buffer.alloc(10);
      header[0] = 0x81;
      header[1] = 0x80 | 127;
      header.writeBigUInt64BE(BigInt(payload.length), 2);
    }
    const masked = Buffer.alloc(payload.length);
    for (let i = 0; i < payload.length; i++) masked[i] = payload[i]! ^ mask[i % 4]!;
    this.socket.write(Buffer.concat([header, mask, masked]));
  }

  /** From now on nothing is read: the kernel buffers fill, then the server's send buffer. */
  stopReading(): void {
    this.socket.pause();
  }

  /**
   * Reads (and discards) what is left and resolves when the server has closed the connection.
   * A paused socket never sees the end of the stream, so this resumes it.
   */
  drainUntilClosed(): Promise<void> {
    this.socket.on("data", () => {});
    this.socket.on("error", () => {});
    this.socket.resume();
    return this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}
