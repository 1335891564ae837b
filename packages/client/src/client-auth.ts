import type { User } from "@patchbay/protocol";
import type { HelloAuth } from "./connection";
import { AuthError } from "./errors";
import { createUserToken, tokenExpiresAt, type UserTokenOptions } from "./user-token";

/** Renew a user token this long before it expires, so a dial never presents a stale one. */
const TOKEN_RENEW_MARGIN_MS = 10_000;

/** The credentials a client was given (see `ClientOptions`). */
export interface AuthOptions {
  apiKey?: string;
  secret?: string;
  tokenProvider?: (user: User | undefined) => Promise<string> | string;
}

/**
 * How a client proves who it is, on the socket (`hello`) and over HTTP: a backend's API key and
 * secret, or a page's user token, renewed through the token provider before it expires and once
 * after a refusal. Concurrent callers share one renewal.
 */
export class ClientAuth {
  readonly #options: AuthOptions;
  #user: User | undefined;
  #token: string | undefined;
  #tokenRefresh: Promise<string> | undefined;

  constructor(options: AuthOptions) {
    this.#options = options;
  }

  /** The user set with `setUser`, if any. */
  get user(): User | undefined {
    return this.#user;
  }

  /** Acts as `user` with `token`; true when that changes who the client is. */
  setUser(user: User, token: string | undefined): boolean {
    const changed = token !== this.#token || user.id !== this.#user?.id;
    this.#user = user;
    this.#token = token;
    return changed;
  }

  /** Whether refused credentials are worth one refresh: a user token with a provider behind it. */
  canRefresh(): boolean {
    return this.#options.tokenProvider !== undefined && this.#actsAsUser();
  }

  /** The credentials for the next `hello`. */
  async hello(refresh: boolean): Promise<HelloAuth> {
    if (this.#actsAsUser()) return { kind: "user", token: await this.#userToken(refresh) };
    // An undefined secret is left out of the JSON.
    return { kind: "api_key", apiKey: this.#options.apiKey!, secret: this.#options.secret };
  }

  /** The headers of an HTTP call. */
  async headers(refresh: boolean): Promise<Record<string, string>> {
    if (this.#actsAsUser()) return { authorization: `Bearer ${await this.#userToken(refresh)}` };
    const headers: Record<string, string> = { "x-api-key": this.#options.apiKey! };
    if (this.#options.secret !== undefined) headers.authorization = `Bearer ${this.#options.secret}`;
    return headers;
  }

  /** Mints a user token for a page (needs the secret). */
  createUserToken(userId: string, options: UserTokenOptions): Promise<string> {
    if (!this.#options.secret)
      return Promise.reject(new AuthError("createUserToken needs the client's secret"));
    return createUserToken(this.#options.secret, userId, options);
  }

  #actsAsUser(): boolean {
    return this.#user !== undefined || this.#options.apiKey === undefined;
  }

  async #userToken(refresh: boolean): Promise<string> {
    const provider = this.#options.tokenProvider;
    const expiresAt = this.#token === undefined ? undefined : tokenExpiresAt(this.#token);
    const stale =
      this.#token === undefined ||
      refresh ||
      (expiresAt !== undefined && expiresAt - TOKEN_RENEW_MARGIN_MS < Date.now());
    if (stale && provider) {
      // Concurrent callers (a dial and an HTTP call) share one refresh.
      this.#tokenRefresh ??= Promise.resolve(provider(this.#user)).finally(() => {
        this.#tokenRefresh = undefined;
      });
      this.#token = await this.#tokenRefresh;
    }
    if (this.#token === undefined) {
      throw new AuthError("no credentials: pass apiKey and secret, or call setUser(user, token)");
    }
    return this.#token;
  }
}
