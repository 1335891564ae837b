import type { ConversationItem, User } from "@patchbay/protocol";
import { type CallState, signalOf } from "./call-state";
import type { ToolCallContext } from "./tool-definition";

/** What a call's context asks of the executor. */
export interface ContextHost {
  readonly sessionId: string;
  readonly user: User;
  conversation(): readonly ConversationItem[];
  update(state: CallState, text: string): void;
  say(state: CallState, text: string): void;
  hold(state: CallState): Promise<AbortSignal>;
}

/**
 * A call's {@link ToolCallContext}: one object per call. Its signal is made when read, and its
 * methods are bound when first read (so `const { update } = ctx` still works), because most
 * tools use none of them.
 */
export class CallContext implements ToolCallContext {
  declare readonly id: string;
  declare readonly name: string;
  declare readonly sessionId: string;
  declare readonly user: User;
  declare readonly attempt: number;
  readonly #host: ContextHost;
  readonly #state: CallState;
  #boundUpdate: ((text: string) => void) | undefined;
  #boundSay: ((text: string) => void) | undefined;
  #boundHold: (() => Promise<AbortSignal>) | undefined;

  constructor(host: ContextHost, state: CallState) {
    this.id = state.call.id;
    this.name = state.call.name;
    this.sessionId = host.sessionId;
    this.user = host.user;
    this.attempt = state.attempt;
    this.#host = host;
    this.#state = state;
  }

  get signal(): AbortSignal {
    return signalOf(this.#state);
  }

  get conversation(): readonly ConversationItem[] {
    return this.#host.conversation();
  }

  get update(): (text: string) => void {
    const host = this.#host;
    const state = this.#state;
    this.#boundUpdate ??= (text) => host.update(state, text);
    return this.#boundUpdate;
  }

  get say(): (text: string) => void {
    const host = this.#host;
    const state = this.#state;
    this.#boundSay ??= (text) => host.say(state, text);
    return this.#boundSay;
  }

  get disallowInterruptions(): () => Promise<AbortSignal> {
    const host = this.#host;
    const state = this.#state;
    this.#boundHold ??= () => host.hold(state);
    return this.#boundHold;
  }
}
