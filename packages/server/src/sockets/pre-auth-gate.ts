/**
 * Counts sockets that are connected but not yet authenticated, in total and per remote address,
 * so that nobody can hold more than their share of them open until the hello timeout. A socket
 * is admitted at upgrade and released once it authenticates or goes.
 */
export class PreAuthGate {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    private readonly limits: { maxUnauthenticatedSockets: number; maxUnauthenticatedPerAddress: number },
  ) {}

  /**
   * Admits a socket from `address` (`undefined`: it may proceed, and must be released once with
   * {@link release}), or names the limit it hit.
   */
  admit(address: string): "maxUnauthenticatedSockets" | "maxUnauthenticatedPerAddress" | undefined {
    if (this.total >= this.limits.maxUnauthenticatedSockets) return "maxUnauthenticatedSockets";
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.limits.maxUnauthenticatedPerAddress) return "maxUnauthenticatedPerAddress";
    this.total += 1;
    this.byAddress.set(address, mine + 1);
    return undefined;
  }

  /** A socket admitted from `address` authenticated or went (its owner calls this once). */
  release(address: string): void {
    this.total -= 1;
    const left = (this.byAddress.get(address) ?? 1) - 1;
    if (left <= 0) this.byAddress.delete(address);
    else this.byAddress.set(address, left);
  }

  /** Sockets waiting to authenticate right now. */
  get size(): number {
    return this.total;
  }
}
