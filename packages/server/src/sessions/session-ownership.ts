import { LeaseLostError, SessionElsewhereError } from "../errors";
import type { Logger } from "../observability/logger";
import type { CommitResult, SessionChange, SessionLeases, Store } from "../store/store";

/**
 * Options of {@link SessionOwnership}: this node's id and how long its leases live.
 */
export interface SessionOwnershipOptions {
  leases: SessionLeases;
  nodeId: string;
  /** How long a lease lives without renewal; renewed every third of it. */
  leaseTtlMs: number;
  logger: Logger;
  /** Called once when a lease of a loaded session is lost (a renewal or a fenced write refused). */
  onLost: (sessionId: string) => void;
  /** Each lease movement, for metrics: a fresh claim, a release, a loss. */
  onLease?: ((event: "claimed" | "released" | "lost") => void) | undefined;
}

/**
 * Which sessions this node owns in a cluster (docs/cluster.md): a lease per loaded session,
 * claimed before the session loads, renewed every `leaseTtlMs / 3` while it stays loaded,
 * released when it unloads. A renewal that finds the lease taken, or a write the store refuses
 * with `lease_lost`, reports the session lost once through `onLost`. Not used on a single server.
 */
export class SessionOwnership {
  private readonly owned = new Map<string, number>();
  private readonly timer: ReturnType<typeof setInterval>;
  private renewing = false;

  constructor(private readonly options: SessionOwnershipOptions) {
    this.timer = setInterval(() => void this.renewAll(), Math.max(10, Math.floor(options.leaseTtlMs / 3)));
    this.timer.unref();
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  /** Sessions whose lease this node holds. */
  get size(): number {
    return this.owned.size;
  }

  /**
   * Claims the session's lease for this node. `fresh` means the lease was not this node's live
   * lease before, so what a dead owner left running must be recovered before the session loads.
   * Another node's live lease is refused with `unavailable`, naming the owner.
   */
  async claim(sessionId: string): Promise<{ token: number; fresh: boolean }> {
    const attempt = await this.options.leases.acquire(
      sessionId,
      this.options.nodeId,
      this.options.leaseTtlMs,
    );
    if (!attempt.acquired) {
      throw new SessionElsewhereError(sessionId, attempt.owner, attempt.expiresAt);
    }
    this.owned.set(sessionId, attempt.token);
    if (attempt.fresh) this.options.onLease?.("claimed");
    return { token: attempt.token, fresh: attempt.fresh };
  }

  /** The store as one owned session writes it: every commit carries the lease's token. */
  fenced(store: Store, sessionId: string, token: number): Store {
    const commit = async (id: string, change: SessionChange): Promise<CommitResult> => {
      try {
        return await store.commit(id, { ...change, fence: token });
      } catch (error) {
        if (error instanceof LeaseLostError) this.lost(sessionId, token);
        throw error;
      }
    };
    return new Proxy(store, {
      get(target, key, receiver) {
        if (key === "commit") return commit;
        // A group commit would write this session's changes without its fence: one at a time.
        if (key === "commitMany") return undefined;
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** Lets the session's lease go (it unloaded), so any node may take it at once. */
  async release(sessionId: string): Promise<void> {
    const token = this.owned.get(sessionId);
    if (token === undefined) return;
    this.owned.delete(sessionId);
    this.options.onLease?.("released");
    await this.options.leases.release(sessionId, this.options.nodeId, token).catch((error: unknown) => {
      // It expires on its own within the TTL.
      this.options.logger.warn("could not release a session lease", { sessionId, error });
    });
  }

  /** Stops renewing and releases every lease (the server is closing). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.owned.keys()].map((sessionId) => this.release(sessionId)));
  }

  /** Renews every owned lease once (the timer calls it every third of the TTL). */
  async renewAll(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      for (const [sessionId, token] of [...this.owned]) {
        const kept = await this.options.leases
          .renew(sessionId, this.options.nodeId, token, this.options.leaseTtlMs)
          .catch((error: unknown) => {
            // The database is unreachable: try again next round; the lease may expire meanwhile,
            // and then the next renewal (or a fenced write) finds it lost.
            this.options.logger.warn("could not renew a session lease", { sessionId, error });
            return true;
          });
        if (!kept) this.lost(sessionId, token);
      }
    } finally {
      this.renewing = false;
    }
  }

  private lost(sessionId: string, token: number): void {
    if (this.owned.get(sessionId) !== token) return;
    this.owned.delete(sessionId);
    this.options.onLease?.("lost");
    this.options.logger.warn("lost the lease of a session: another node owns it now", {
      sessionId,
      nodeId: this.options.nodeId,
    });
    this.options.onLost(sessionId);
  }
}
