import type { WebSocketLike } from "@patchbay/protocol/runtime";
import { ClientCore } from "./client-core";
import type { ClientOptions } from "./client-options";
import { sessionStorageStore } from "./web-storage-idempotency-store";

/**
 * The Patchbay session client for browsers: one native WebSocket per client, shared by all its
 * sessions, opened on first use and kept alive across drops. A page authenticates with a user
 * token its backend minted (`setUser`), and may pass a `tokenProvider` to refresh it.
 *
 * @example
 * ```ts
 * import { Client } from "@patchbay/client";
 * const client = new Client({ baseUrl: location.origin, tokenProvider: () => fetch("/token").then((r) => r.text()) });
 * client.setUser({ id: "user_42" }, initialToken);
 * const session = await client.agent("support").sessions.create({ tools });
 * ```
 *
 * Page tool results are kept in `sessionStorage` unless `idempotencyStore` says otherwise, so a
 * call pending across a reload of the page never runs twice.
 */
export class Client extends ClientCore {
  constructor(options: ClientOptions) {
    const store = options.idempotencyStore ?? sessionStorageStore();
    super(store === undefined ? options : { ...options, idempotencyStore: store }, {
      createSocket: (url) => {
        // Looked up at dial time, not import time, so the module can load where there is none (SSR).
        const NativeWebSocket = globalThis.WebSocket;
        if (!NativeWebSocket) throw new TypeError("this runtime has no WebSocket; pass createSocket");
        return new NativeWebSocket(url) as unknown as WebSocketLike;
      },
    });
  }
}
