/** Options of a {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** The most tokens the bucket holds: how large a burst may be. */
  capacity: number;
  /** Tokens added per second: the sustained rate. */
  refillPerSecond: number;
  /** The clock, in ms; injectable for tests. */
  now?: () => number;
}

/**
 * A token bucket: each frame takes a token; an empty bucket means the sender is over the rate.
 * The options object is kept as it is (read, never changed): the buckets made with one object
 * share it, so each holds two numbers and a reference (a server holds two buckets per socket).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly options: TokenBucketOptions;

  constructor(options: TokenBucketOptions) {
    if (!(options.capacity > 0) || !(options.refillPerSecond > 0)) {
      throw new RangeError("TokenBucket: capacity and refillPerSecond must be positive");
    }
    this.options = options;
    this.tokens = options.capacity;
    this.last = this.now();
  }

  private now(): number {
    const { now } = this.options;
    return now ? now() : Date.now();
  }

  /** Takes `count` tokens if there are enough; returns whether it did. */
  take(count = 1): boolean {
    this.refill();
    if (this.tokens < count) return false;
    this.tokens -= count;
    return true;
  }

  /** Gives back `count` tokens taken for what turned out not to cost any. */
  refund(count = 1): void {
    this.tokens = Math.min(this.options.capacity, this.tokens + count);
  }

  /** How long until one token is available, in ms (0 when one is). */
  retryAfterMs(): number {
    this.refill();
    if (this.tokens >= 1) return 0;
    return Math.ceil(((1 - this.tokens) / this.options.refillPerSecond) * 1000);
  }

  private refill(): void {
    const now = this.now();
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    const { capacity, refillPerSecond } = this.options;
    this.tokens = Math.min(capacity, this.tokens + (elapsed / 1000) * refillPerSecond);
  }
}
