import { Client, type ReplyResult } from "@patchbay/client";
import type { InboundMessage } from "@patchbay/protocol";
import { DispatchError } from "./dispatch-error";
import { WORKER_PATH } from "./worker-url";

/**
 * The server's HTTP base URL from the URL a worker was given (`http(s)://host[/base]` or its
 * worker socket URL `ws(s)://host[/base]/v1/worker`).
 */
export function httpBaseUrl(url: string): string {
  const parsed = new URL(url);
  const schemes: Record<string, string> = { "ws:": "http:", "wss:": "https:" };
  parsed.protocol = schemes[parsed.protocol] ?? parsed.protocol;
  const path = parsed.pathname.replace(/\/+$/, "");
  parsed.pathname = path.endsWith(WORKER_PATH) ? path.slice(0, -WORKER_PATH.length) : path;
  parsed.hash = "";
  parsed.search = "";
  return parsed.toString().replace(/\/+$/, "");
}

/**
 * Replies in a worker's own words, over the server's HTTP API with the worker's credentials.
 * The client behind it opens no socket. Internal to `Dispatch`.
 */
export class WorkerReplies {
  #client: Client | undefined;
  constructor(private readonly server: { url: string; apiKey: string; secret: string }) {}

  /** Adds `text` as the assistant's reply to `message` and ends the user's turn with it. */
  reply(message: InboundMessage, text: string): Promise<ReplyResult> {
    if (!message.sessionId) {
      return Promise.reject(
        new DispatchError(
          "no_session",
          `message ${message.id} came from a channel, not a session; reply on the channel, or open a session with sessionFor(message, factory)`,
        ),
      );
    }
    this.#client ??= new Client({
      baseUrl: httpBaseUrl(this.server.url),
      apiKey: this.server.apiKey,
      secret: this.server.secret,
    });
    // One reply per message: the command id is the message's, so a retry changes nothing.
    return this.#client.agent(message.agent).sessions.reply(message.sessionId, text, {
      messageId: message.id,
      commandId: `reply-${message.id}`.slice(0, 256),
    });
  }

  close(): void {
    this.#client?.close();
  }
}
