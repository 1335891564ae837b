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

  /** A release function when the socket may proceed, or the name of the limit it hit. */
  admit(
    address: string,
  ): { release: () => void } | { limit: "maxUnauthenticatedSockets" | "maxUnauthenticatedPerAddress" } {
    if (this.total >= this.limits.maxUnauthenticatedSockets) return { limit: "maxUnauthenticatedSockets" };
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.limits.maxUnauthenticatedPerAddress) return { limit: "maxUnauthenticatedPerAddress" };
    this.total += 1;
    this.byAddress.set(address, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        const left = (this.byAddress.get(address) ?? 1) - 1;
        if (left <= 0) this.byAddress.delete(address);
        else this.byAddress.set(address, left);
      },
    };
  }

  /** Sockets waiting to authenticate right now. */
  get size(): number {
    return this.total;
  }
}
