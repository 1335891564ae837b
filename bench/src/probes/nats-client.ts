// The NATS client library the probes use: the server's own copy of `@nats-io/transport-node`
// (the bench does not depend on it, nor on its types: the probes type the little they use).
import { createRequire } from "node:module";

/** What the probes use of a NATS connection. */
export interface NatsLike {
  subscribe(
    subject: string,
    options: { callback: (error: unknown, message: { data: Uint8Array }) => void },
  ): unknown;
  publish(subject: string, payload: Uint8Array): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

const fromServer = createRequire(new URL("../../../packages/server/package.json", import.meta.url));

/** Connects to the NATS server at `url` with the server's copy of the client. */
export const connectNats = (
  (await import(fromServer.resolve("@nats-io/transport-node"))) as {
    connect: (options: { servers: string }) => Promise<NatsLike>;
  }
).connect;
