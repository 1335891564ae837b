import type { Usage } from "@patchbay/protocol";
import type { ClientError } from "./errors";

/**
 * Why a reply ended, as the server reports it in `response.completed`. `refusal`: the model
 * declined to answer and `text` is its refusal, meant for the user.
 *
 * @example
 * ```ts
 * if (reply.reason === "interrupted") showNotice("stopped");
 * ```
 */
export type ResponseReason = "stop" | "interrupted" | "max_rounds" | "answered_by_worker" | "refusal";

/**
 * A finished reply.
 *
 * @example
 * ```ts
 * const { id, text, reason, usage } = await session.responses.create("Where is my order?");
 * ```
 */
export interface ResponseResult {
  /** The server's response id. */
  id: string;
  /** The final assistant text. */
  text: string;
  reason: ResponseReason;
  usage?: Usage;
}

/**
 * What the session feeds a {@link Response} as events arrive.
 */
export interface ResponseSink {
  started(responseId: string): void;
  delta(text: string): void;
  completed(result: ResponseResult): void;
  failed(error: ClientError): void;
}

/**
 * The reply to one message: a promise of the final reply and, at the same time, an async
 * iterable of its text deltas. Each iteration starts from the first delta, so it can begin late.
 * On `response.failed` the promise rejects and the iteration throws a typed error.
 *
 * @example
 * ```ts
 * const response = session.responses.create("hi");
 * for await (const delta of response) process.stdout.write(delta);
 * const { text, usage } = await response;
 * ```
 */
export class Response implements PromiseLike<ResponseResult>, AsyncIterable<string> {
  /** The command id of the message; a retried send reuses it, so the server runs it once. */
  declare readonly commandId: string;
  #id: string | undefined;
  readonly #deltas: string[] = [];
  #settled: { ok: true; result: ResponseResult } | { ok: false; error: ClientError } | undefined;
  readonly #wakers = new Set<() => void>();
  readonly #promise: Promise<ResponseResult>;

  constructor(commandId: string, attach: (sink: ResponseSink) => void) {
    this.commandId = commandId;
    let resolve!: (result: ResponseResult) => void;
    let reject!: (error: ClientError) => void;
    this.#promise = new Promise<ResponseResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A caller that only iterates must not see an unhandled rejection; awaiting still rejects.
    this.#promise.catch(() => {});
    attach({
      started: (responseId) => {
        this.#id ??= responseId;
      },
      delta: (text) => {
        if (this.#settled) return;
        this.#deltas.push(text);
        this.#wake();
      },
      completed: (result) => {
        if (this.#settled) return;
        this.#id ??= result.id;
        this.#settled = { ok: true, result };
        resolve(result);
        this.#wake();
      },
      failed: (error) => {
        if (this.#settled) return;
        this.#settled = { ok: false, error };
        reject(error);
        this.#wake();
      },
    });
  }

  /** The server's response id, once the reply started. */
  get id(): string | undefined {
    return this.#id;
  }

  /** The text streamed so far. */
  get text(): string {
    return this.#deltas.join("");
  }

  /** Whether the reply finished (completed or failed). */
  get done(): boolean {
    return this.#settled !== undefined;
  }

  // biome-ignore lint/suspicious/noThenProperty: a Response is deliberately awaitable.
  then<A = ResponseResult, B = never>(
    onfulfilled?: ((value: ResponseResult) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#promise.then(onfulfilled, onrejected);
  }

  /** Like `Promise.prototype.catch`. */
  catch<B = never>(
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<ResponseResult | B> {
    return this.#promise.catch(onrejected);
  }

  /** Like `Promise.prototype.finally`. */
  finally(onfinally?: (() => void) | null): Promise<ResponseResult> {
    return this.#promise.finally(onfinally);
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    let index = 0;
    const next = async (): Promise<IteratorResult<string>> => {
      if (index < this.#deltas.length) return { value: this.#deltas[index++]!, done: false };
      if (this.#settled?.ok === false) throw this.#settled.error;
      if (this.#settled) return { value: undefined, done: true };
      await new Promise<void>((wake) => this.#wakers.add(wake));
      return next();
    };
    return { next };
  }

  #wake(): void {
    // A woken iterator waits again only in a later microtask: none is added meanwhile.
    for (const wake of this.#wakers) wake();
    this.#wakers.clear();
  }
}
