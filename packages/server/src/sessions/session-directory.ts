import type { ConversationItem, JsonObject, SessionEvent, SessionInfo } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import { assertCanAccess, type Principal, sessionOwner } from "../auth/auth";
import type { AgentConfig } from "../config/agent-config";
import { QuotaError } from "../config/limits";
import { NotFoundError, ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import { afterSessionUnloaded } from "../sockets/memory-reclaim";
import type { SessionLease, SessionLeases, SessionRecord, Store } from "../store/store";
import { forEndUsers } from "../turns/reasoning-state";
import { LiveSession, type LiveSessionDeps } from "./live-session";
import { type ResumableTurn, recoverSession } from "./recovery";
import { SessionLog } from "./session-log";
import { SessionOwnership } from "./session-ownership";

/** Expired leases one takeover sweep looks at, and how many of them it takes over at once. */
const SWEEP_BATCH = 64;
const SWEEP_PARALLEL = 4;

/** What a {@link SessionDirectory} is built from. */
export interface SessionDirectoryOptions {
  store: Store;
  agents: ReadonlyMap<string, AgentConfig>;
  /** The shared parts a live session of an agent needs (its model, tools, seams). */
  deps: (agent: AgentConfig) => LiveSessionDeps;
  logger: Logger;
  metrics: ServerMetrics;
  /** Conversation items a live session keeps in memory; default all. */
  liveWindowItems?: number;
  /** Sessions one user (a user token) may have; default unlimited. */
  maxSessionsPerUser?: number;
  /**
   * Cluster mode (docs/cluster.md): a session loads only under a lease of this node, its writes
   * are fenced with the lease's token, and sessions whose owner died are recovered here.
   */
  cluster?: {
    leases: SessionLeases;
    nodeId: string;
    leaseTtlMs: number;
    /** Each lease movement (metrics); `taken_over` is a dead node's session recovered here. */
    onLease?: (event: "claimed" | "released" | "lost" | "taken_over") => void;
  };
}

/**
 * The directory of every session (stored or loaded): creates, finds, lists and deletes them, loading a session's {@link LiveSession} when it is
 * used and unloading it when nothing holds it. Every method that names a session checks that
 * the principal may reach it: another user's session answers `not_found`, like a missing one.
 */
export class SessionDirectory {
  private readonly live = new Map<string, LiveSession>();
  private readonly loading = new Map<string, Promise<LiveSession>>();
  private readonly holds = new Map<string, number>();
  private closed = false;
  private readonly ownership: SessionOwnership | undefined;
  private readonly sweeper: ReturnType<typeof setInterval> | undefined;
  private sweeping = false;

  constructor(private readonly options: SessionDirectoryOptions) {
    const cluster = options.cluster;
    if (cluster) {
      this.ownership = new SessionOwnership({
        ...cluster,
        logger: options.logger,
        onLost: (sessionId) => this.dropLost(sessionId),
      });
      this.sweeper = setInterval(
        () => void this.takeOverExpired(),
        Math.max(10, Math.floor(cluster.leaseTtlMs / 3)),
      );
      this.sweeper.unref();
    }
  }

  /** This node's session ownership (cluster mode only). */
  get owned(): SessionOwnership | undefined {
    return this.ownership;
  }

  /** The configured agents. */
  get agents(): ReadonlyMap<string, AgentConfig> {
    return this.options.agents;
  }

  agent(agentId: string): AgentConfig {
    const agent = this.options.agents.get(agentId);
    if (!agent) throw new NotFoundError("agent", agentId);
    return agent;
  }

  /** Creates a session of an agent for the principal (a backend names the user). */
  async create(
    principal: Principal,
    agentId: string,
    input: { userId?: string; metadata?: JsonObject } = {},
  ): Promise<SessionInfo> {
    this.assertOpen();
    const agent = this.agent(agentId);
    const userId = sessionOwner(principal, input.userId);
    const max = this.options.maxSessionsPerUser;
    if (max !== undefined && principal.kind === "user" && this.options.store.countSessions) {
      const count = await this.options.store.countSessions({
        userId,
        agents: [...this.options.agents.keys()],
      });
      if (count >= max)
        throw new QuotaError("maxSessionsPerUser", `user ${userId} already has ${count} sessions`);
    }
    const record = {
      id: `s_${nanoid(16)}`,
      agent: agent.id,
      userId,
      metadata: input.metadata ?? {},
      createdAt: Date.now(),
      lastSeq: 0,
    };
    await this.options.store.createSession(record);
    this.options.metrics.sessionsCreated.inc();
    return { ...record };
  }

  /** The session's description, if the principal may reach it. */
  async info(principal: Principal, sessionId: string): Promise<SessionInfo> {
    const live = this.live.get(sessionId);
    if (live) {
      assertCanAccess(principal, live.runtime.info, sessionId);
      return live.runtime.info;
    }
    const record = await this.options.store.getSession(sessionId);
    assertCanAccess(principal, record, sessionId);
    return record;
  }

  /** The session and its conversation. */
  async get(
    principal: Principal,
    sessionId: string,
  ): Promise<{ session: SessionInfo; conversation: ConversationItem[] }> {
    const live = this.live.get(sessionId);
    if (live) {
      assertCanAccess(principal, live.runtime.info, sessionId);
      // Memory may hold only the latest part of a long conversation; the store has all of it.
      const conversation = live.runtime.conversationSize.partial
        ? await this.options.store.conversation(sessionId)
        : live.runtime.conversation();
      return { session: live.runtime.info, conversation: conversation.map(forEndUsers) };
    }
    const session = await this.info(principal, sessionId);
    return { session, conversation: (await this.options.store.conversation(sessionId)).map(forEndUsers) };
  }

  /** Sessions of an agent; a user sees only their own. */
  async list(principal: Principal, agentId: string, userId?: string, limit?: number): Promise<SessionInfo[]> {
    this.agent(agentId);
    if (principal.kind === "user" && userId !== undefined && userId !== principal.userId) {
      throw new ServerError("forbidden", "a user token can only list its own sessions", { path: "userId" });
    }
    const owner = principal.kind === "user" ? principal.userId : userId;
    return this.options.store.listSessions({
      agent: agentId,
      ...(owner === undefined ? {} : { userId: owner }),
      ...(limit === undefined ? {} : { limit }),
    });
  }

  /** Events after `afterSeq`, with the session's last sequence number. */
  async events(
    principal: Principal,
    sessionId: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ events: SessionEvent[]; lastSeq: number }> {
    const info = await this.info(principal, sessionId);
    const events = await this.options.store.readEvents(sessionId, afterSeq, limit);
    const live = this.live.get(sessionId);
    return { events, lastSeq: live?.runtime.lastSeq ?? info.lastSeq };
  }

  /** Deletes a session: its work stops and everything stored about it goes. */
  async delete(principal: Principal, sessionId: string): Promise<void> {
    await this.info(principal, sessionId);
    const live = this.live.get(sessionId);
    if (live) {
      await live.close(1_000);
      live.runtime.close("deleted");
      this.live.delete(sessionId);
      this.holds.delete(sessionId);
      this.options.metrics.sessions.set(this.live.size);
    } else if (this.ownership && !this.loading.has(sessionId)) {
      // In a cluster the session's owner deletes it (its turns stop first); another node's live
      // lease refuses the claim with `SessionElsewhereError`, which the HTTP API passes there.
      await this.ownership.claim(sessionId);
    }
    await this.options.store.deleteSession(sessionId);
    await this.ownership?.release(sessionId);
  }

  /**
   * Loads the session (after an access check) and keeps it loaded until `release` is called: a
   * socket holds it while attached, an HTTP request while its turn runs.
   */
  async acquire(
    principal: Principal,
    sessionId: string,
  ): Promise<{ live: LiveSession; release: () => void }> {
    const live = await this.hold(principal, sessionId);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.releaseHold(sessionId);
    };
    return { live, release };
  }

  /**
   * {@link acquire} without the closure: the holder calls {@link releaseHold} once (a socket's
   * attachment does, since an idle connection's memory is mostly what it holds). `created`: the
   * record {@link create} just returned, for a session nothing has loaded or written since; on a
   * single node its first load reads nothing back (its conversation and page tools are empty).
   * A cluster node reads it under its lease as any other.
   */
  async hold(principal: Principal, sessionId: string, created?: SessionRecord): Promise<LiveSession> {
    this.assertOpen();
    const live = this.live.get(sessionId) ?? (await this.load(sessionId, principal, undefined, created));
    assertCanAccess(principal, live.runtime.info, sessionId);
    // Keyed by the session's own id string (the argument is often a frame's copy of it).
    this.holds.set(live.id, (this.holds.get(sessionId) ?? 0) + 1);
    return live;
  }

  /** Lets go of one {@link hold}: the session may unload once nothing holds it. */
  releaseHold(sessionId: string): void {
    const count = (this.holds.get(sessionId) ?? 1) - 1;
    if (count > 0) this.holds.set(sessionId, count);
    else this.holds.delete(sessionId);
    this.maybeUnload(sessionId);
  }

  /** Loaded sessions (for shutdown and metrics). */
  loaded(): LiveSession[] {
    return [...this.live.values()];
  }

  /**
   * Stops every session's work: running turns are interrupted and given `graceMs` to end
   * (calls that survive interrupts may finish meanwhile); what still runs after that is ended as
   * failed on the next start.
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.live.values()].map((live) => live.close(graceMs)));
    for (const live of this.live.values()) live.runtime.close("shutdown");
    this.live.clear();
    this.options.metrics.sessions.set(0);
    await this.ownership?.close();
  }

  /**
   * Recovers the sessions whose owner died (their lease expired without a release): each is
   * claimed and loaded here, what its owner left running is ended as on a restart, except a turn
   * cut off mid hosted calls, which goes on here (its calls delivered again, same ids); once
   * idle the session unloads and the lease is let go, so it answers again on whichever node a
   * client reaches next. Runs every third of the lease TTL; a session another node claims first
   * is skipped.
   */
  async takeOverExpired(): Promise<number> {
    const ownership = this.ownership;
    if (!ownership || this.sweeping || this.closed) return 0;
    this.sweeping = true;
    let recovered = 0;
    try {
      const expired = await this.options.cluster!.leases.expired(SWEEP_BATCH);
      // A few at a time: a dead node's sessions are recovered side by side (each is a claim, a
      // recovery and a load: round trips to the database), within a few of the pool's connections.
      let next = 0;
      const takeOne = async (): Promise<void> => {
        for (let lease = expired[next++]; lease; lease = expired[next++]) {
          if (await this.takeOver(lease, ownership)) recovered += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(SWEEP_PARALLEL, expired.length) }, takeOne));
    } catch (error) {
      this.options.logger.warn("the takeover sweep failed; it runs again", { error });
    } finally {
      this.sweeping = false;
    }
    return recovered;
  }

  /** Takes over one session whose owner died; true when it was recovered here. */
  private async takeOver(lease: SessionLease, ownership: SessionOwnership): Promise<boolean> {
    if (this.live.has(lease.sessionId) || this.loading.has(lease.sessionId) || this.closed) return false;
    // Loaded here (recovered, and a turn cut off mid hosted calls goes on), then unloaded
    // once idle, which lets the lease go: the next client to attach anywhere loads it.
    let fresh = false;
    const live = await this.load(lease.sessionId, { kind: "backend" }, () => {
      fresh = true;
    }).catch(() => undefined);
    if (!live) {
      // Gone meanwhile (deleted): its lease is let go, so no sweep looks at it again.
      await ownership
        .claim(lease.sessionId)
        .then(() => ownership.release(lease.sessionId))
        .catch(() => {});
      return false;
    }
    if (fresh) {
      this.options.cluster?.onLease?.("taken_over");
      this.options.logger.info("took over a session whose node stopped renewing its lease", {
        sessionId: lease.sessionId,
        from: lease.nodeId,
        resumed: live.busy,
      });
    }
    this.maybeUnload(lease.sessionId);
    return fresh;
  }

  /** The session's lease went to another node: its work here stops at once. */
  private dropLost(sessionId: string): void {
    const live = this.live.get(sessionId);
    if (!live) return;
    this.live.delete(sessionId);
    this.holds.delete(sessionId);
    this.options.metrics.sessions.set(this.live.size);
    live.runtime.close("lease_lost");
    void live.close(0);
  }

  private async load(
    sessionId: string,
    principal: Principal,
    onFresh?: () => void,
    created?: SessionRecord,
  ): Promise<LiveSession> {
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = (async () => {
        const known = this.ownership || created?.id !== sessionId ? undefined : created;
        const record = known ?? (await this.options.store.getSession(sessionId));
        assertCanAccess(principal, record, sessionId);
        const agent = this.options.agents.get(record.agent);
        if (!agent) {
          throw new ServerError(
            "not_found",
            `agent ${record.agent} of session ${sessionId} is not configured`,
          );
        }
        let store = this.options.store;
        let current = record;
        let resumed: ResumableTurn | undefined;
        const deps = this.options.deps(agent);
        if (this.ownership) {
          const claim = await this.ownership.claim(sessionId);
          store = this.ownership.fenced(this.options.store, sessionId, claim.token);
          try {
            if (claim.fresh) {
              onFresh?.();
              // Hosted calls a live worker hosts are delivered again and the turn goes on here.
              const hosted = deps.hostedTools;
              ({ resumed } = await recoverSession(
                store,
                sessionId,
                this.options.logger,
                (item) => hosted?.hasTool(agent.id, item.name) === true,
              ));
            }
            // Read under the lease: the previous owner may have written after the first read.
            const stored = await store.getSession(sessionId);
            if (!stored) throw new NotFoundError("session", sessionId);
            current = stored;
          } catch (error) {
            await this.ownership.release(sessionId);
            throw error;
          }
        }
        const conversation = known ? [] : await store.conversation(sessionId);
        const pageTools = known ? [] : await store.pageTools(sessionId);
        const runtime = new SessionLog(
          compactRecord(current, agent),
          agent,
          conversation,
          store,
          this.options.logger,
          pageTools,
          known !== undefined,
        );
        if (this.options.liveWindowItems !== undefined) runtime.limitWindow(this.options.liveWindowItems);
        const live = new LiveSession(runtime, deps);
        this.live.set(live.id, live);
        this.options.metrics.sessions.set(this.live.size);
        if (resumed) {
          this.options.logger.info("resuming a turn cut off mid hosted calls on a node that died", {
            sessionId,
            responseId: resumed.turn.responseId,
            calls: resumed.calls.map((call) => call.id),
          });
          live.resumeTurn(resumed.turn, resumed.userItem, {
            calls: resumed.calls,
            rounds: resumed.rounds,
            startedAt: resumed.turn.startedAt,
          });
        }
        return live;
      })().finally(() => this.loading.delete(sessionId));
      this.loading.set(sessionId, pending);
    }
    return pending;
  }

  /** A session nothing holds and no turn uses is unloaded (it stays in the store). */
  private maybeUnload(sessionId: string): void {
    const live = this.live.get(sessionId);
    if (!live || this.holds.has(sessionId)) return;
    if (live.busy) {
      void live.idle().then(() => this.maybeUnload(sessionId));
      return;
    }
    this.live.delete(sessionId);
    this.options.metrics.sessions.set(this.live.size);
    void live.runtime.settled().then(async () => {
      live.runtime.close("unloaded");
      afterSessionUnloaded();
      if (!this.live.has(sessionId) && !this.loading.has(sessionId)) await this.ownership?.release(sessionId);
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new ServerError("unavailable", "the server is shutting down");
  }
}

/** The metadata of every loaded session that has none (most): one frozen object, not one each. */
const NO_METADATA: SessionRecord["metadata"] = Object.freeze({});

/**
 * The record a loaded session keeps: the agent's id as the agent config's own string and empty
 * metadata as one shared object, instead of the copies each read of the store makes (an idle
 * session's memory is mostly what it holds).
 */
function compactRecord(record: SessionRecord, agent: AgentConfig): SessionRecord {
  const { metadata } = record;
  return {
    id: record.id,
    agent: record.agent === agent.id ? agent.id : record.agent,
    userId: record.userId,
    metadata: Object.keys(metadata).length === 0 ? NO_METADATA : metadata,
    createdAt: record.createdAt,
    lastSeq: record.lastSeq,
  };
}
