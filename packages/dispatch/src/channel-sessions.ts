import type { InboundMessage, JsonObject } from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import { DispatchError } from "./dispatch-error";

/**
 * What `sessionFor` passes to `sessions.create`: the message's user (a worker connects with the
 * API key, so it may open a session for any user) and the channel in the metadata.
 *
 * @example
 * ```ts
 * const options: ChannelSessionOptions = { userId: "u_1", metadata: { channel: { type: "sms", id: "+1555" } } };
 * ```
 */
export interface ChannelSessionOptions {
  userId?: string;
  metadata?: JsonObject;
}

/**
 * Anything that opens sessions of an agent, such as the handle `client.agent("support")` returns.
 *
 * @example
 * ```ts
 * const source: SessionSource<Session> = client.agent("support");
 * ```
 */
export interface SessionSource<S> {
  sessions: { create(options?: ChannelSessionOptions): Promise<S> };
}

/**
 * Makes the agent handle that opens a channel's session, called once per channel.
 *
 * @example
 * ```ts
 * const support: SessionFactory<Session> = () => client.agent("support");
 * ```
 */
export type SessionFactory<S> = (message: InboundMessage) => SessionSource<S> | Promise<SessionSource<S>>;

/**
 * The session answering each channel, opened from a factory the first time a channel writes and
 * reused after. Concurrent messages of one channel share one `sessions.create`; a failed create
 * is forgotten so the next message tries again. Past `limit` channels, the least recently used
 * tenth is forgotten (in one go, see `RecentMap`), so a worker that sees many one-off channels
 * keeps bounded memory.
 */
export class ChannelSessions {
  readonly #sessions: RecentMap<Promise<unknown>>;

  constructor(limit: number) {
    this.#sessions = new RecentMap(limit);
  }

  /** How many channels have a session. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The session for the message's channel, opened on first use. */
  get<S>(message: InboundMessage, factory: SessionFactory<S>): Promise<S> {
    const channel = message.channel;
    if (!channel) {
      return Promise.reject(
        new DispatchError(
          "no_channel",
          `message ${message.id} has no channel, so there is no channel session for it${
            message.sessionId ? "; it has a session: use answer(message)" : ""
          }`,
        ),
      );
    }
    const key = JSON.stringify([message.agent, channel.type, channel.id]);
    const known = this.#sessions.get(key);
    if (known) {
      this.#sessions.touch(key);
      return known as Promise<S>;
    }
    const created = (async () => {
      const source = await factory(message);
      return source.sessions.create({
        userId: message.user.id,
        metadata: { channel: { type: channel.type, id: channel.id } },
      });
    })();
    this.#sessions.set(key, created);
    created.catch(() => {
      if (this.#sessions.get(key) === created) this.#sessions.delete(key);
    });
    return created;
  }
}
