import { holdWritesForTick, type WebSocketLike } from "@patchbay/protocol/runtime";
import WebSocket from "ws";
import { ClientCore } from "./client-core";
import type { ClientOptions } from "./client-options";
import { connectFailure } from "./connect-failure";

/**
 * Where a {@link Client} connects and with which credentials, as `client.credentials` gives them.
 *
 * @example
 * ```ts
 * const { baseUrl, apiKey, secret }: ClientCredentials = client.credentials;
 * ```
 */
export interface ClientCredentials {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly secret: string | undefined;
}

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
  readonly #credentials: ClientCredentials;

  constructor(options: ClientOptions) {
    super(options, {
      // No `permessage-deflate` offer: the server refuses it, and making and formatting the
      // offer was a share of every connect's CPU here.
      createSocket: (url) => new WebSocket(url, { perMessageDeflate: false }) as unknown as WebSocketLike,
      connectFailure,
      // The frames of one turn of the event loop leave in one write (a browser has no stream to hold).
      holdWrites: holdWritesForTick,
    });
    this.#credentials = Object.freeze({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      secret: options.secret,
    });
  }

  /**
   * The server URL, API key and secret this client was made with, so a dispatch worker in the
   * same process can use them: `new Dispatch({ client })`. A getter, so the secret does not show
   * when the client is logged.
   *
   * @example
   * ```ts
   * const dispatch = new Dispatch({ client });
   * ```
   */
  get credentials(): ClientCredentials {
    return this.#credentials;
  }
}
