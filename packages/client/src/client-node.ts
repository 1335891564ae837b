import type { WebSocketLike } from "@patchbay/protocol/runtime";
import WebSocket from "ws";
import { ClientCore } from "./client-core";
import type { ClientOptions } from "./client-options";
import { connectFailure } from "./connect-failure";

/**
 * The Patchbay session client for Node: one WebSocket (from `ws`) per client, shared by all its
 * sessions, opened on first use and kept alive across drops. A backend passes `apiKey` and
 * `secret`, acts for any user and mints user tokens.
 *
 * @example
 * ```ts
 * import { Client } from "@patchbay/client";
 * const client = new Client({ baseUrl: "http://127.0.0.1:8787", apiKey, secret });
 * const session = await client.agent("support").sessions.create({ userId: "user_42" });
 * console.log((await session.responses.create("Where is my order?")).text);
 * ```
 */
export class Client extends ClientCore {
  constructor(options: ClientOptions) {
    super(options, { createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike, connectFailure });
  }
}
