import type { ConversationItem, JsonObject, SessionEvent, SessionInfo } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import { assertCanAccess, type Principal, sessionOwner } from "../auth/auth";
import type { AgentConfig } from "../config/agent-config";
import { QuotaError } from "../config/limits";
import { NotFoundError, ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import { afterSessionUnloaded } from "../sockets/memory-reclaim";
import type { Store } from "../store/store";
import { forEndUsers } from "../turns/reasoning-state";
import { LiveSession, type LiveSessionDeps } from "./live-session";
import { SessionLog } from "./session-log";

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

  constructor(private readonly options: SessionDirectoryOptions) {}

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
    }
    await this.options.store.deleteSession(sessionId);
  }

  /**
   * Loads the session (after an access check) and keeps it loaded until `release` is called: a
   * socket holds it while attached, an HTTP request while its turn runs.
   */
  async acquire(
    principal: Principal,
    sessionId: string,
  ): Promise<{ live: LiveSession; release: () => void }> {
    this.assertOpen();
    const live = this.live.get(sessionId) ?? (await this.load(sessionId, principal));
    assertCanAccess(principal, live.runtime.info, sessionId);
    this.holds.set(sessionId, (this.holds.get(sessionId) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const count = (this.holds.get(sessionId) ?? 1) - 1;
      if (count > 0) this.holds.set(sessionId, count);
      else this.holds.delete(sessionId);
      this.maybeUnload(sessionId);
    };
    return { live, release };
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
    await Promise.all([...this.live.values()].map((live) => live.close(graceMs)));
    for (const live of this.live.values()) live.runtime.close("shutdown");
    this.live.clear();
    this.options.metrics.sessions.set(0);
  }

  private async load(sessionId: string, principal: Principal): Promise<LiveSession> {
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = (async () => {
        const record = await this.options.store.getSession(sessionId);
        assertCanAccess(principal, record, sessionId);
        const agent = this.options.agents.get(record.agent);
        if (!agent) {
          throw new ServerError(
            "not_found",
            `agent ${record.agent} of session ${sessionId} is not configured`,
          );
        }
        const conversation = await this.options.store.conversation(sessionId);
        const logger = this.options.logger.child({ sessionId });
        const pageTools = await this.options.store.pageTools(sessionId);
        const runtime = new SessionLog(record, agent, conversation, this.options.store, logger, pageTools);
        if (this.options.liveWindowItems !== undefined) runtime.limitWindow(this.options.liveWindowItems);
        const live = new LiveSession(runtime, this.options.deps(agent));
        this.live.set(sessionId, live);
        this.options.metrics.sessions.set(this.live.size);
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
    void live.runtime.settled().then(() => {
      live.runtime.close("unloaded");
      afterSessionUnloaded();
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new ServerError("unavailable", "the server is shutting down");
  }
}
