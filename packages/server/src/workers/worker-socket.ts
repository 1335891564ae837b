import {
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_RESULT_FRAME_BYTES,
  DEFAULT_WORKER_RECEIVE_BYTES,
  PROTOCOL_VERSION,
  resultTooLarge,
  type ServerToWorkerFrame,
  type WorkerToServerFrame,
} from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type WebSocket from "ws";
import { type Logger, silentLogger } from "../observability/logger";
import { oversizedResult } from "../sockets/oversized-result";
import { PeerCloseCodes, PeerSocket } from "../sockets/peer-socket";
import type { ConnectionGuards } from "../sockets/socket-guards";
import type { DispatchMetrics } from "./dispatch-metrics";
import { KeptConversations } from "./kept-conversations";
import type { WorkRouter } from "./work-router";
import { type ConnectedWorker, hostsFromHello, type WorkerRegistry } from "./worker-registry";
import type { WorkerToolRouter } from "./worker-tool-router";

/** What a worker socket needs from the rest of the server. */
export interface WorkerSocketDeps {
  /** Throws when the key or secret is wrong. */
  checkApiKey: (apiKey: string, secret: string | undefined) => void;
  registry: WorkerRegistry;
  work: WorkRouter;
  tools: WorkerToolRouter;
  /** How often the server sends a JSON `ping` after `worker.ready`; a worker silent for two intervals is dropped (4408). */
  heartbeatIntervalMs: number;
  /** How long a new socket has to say hello. Default 10 s. */
  helloTimeoutMs?: number;
  /** Largest frame a worker may send, results aside. Default 5 MiB. */
  maxFrameBytes?: number;
  /** Largest `hosted.result` a worker may send. Default 8 MiB. */
  maxResultFrameBytes?: number;
  /** More than this waiting to be sent to a worker for `slowReaderGraceMs` closes its socket (1013). Default 8 MiB. */
  maxBufferedBytes?: number;
  /** Default 5 s. */
  slowReaderGraceMs?: number;
  /** Whether the server has an agent of that name (a hello hosting another is told so). */
  agentExists?: (agent: string) => boolean;
  metrics?: DispatchMetrics;
  logger?: Logger;
}

/** Close codes of the worker socket. */
export const WorkerCloseCodes = {
  /** The worker did not say hello in time, or spoke out of turn. */
  protocol: 4400,
  /** The key or secret was wrong. */
  unauthorized: 4401,
  /** A newer socket of the same worker replaced this one. */
  replaced: 4409,
  /** The worker stopped answering heartbeats. */
  heartbeat: PeerCloseCodes.heartbeat,
  /** The server is shutting down. */
  shutdown: 1001,
} as const;

/**
 * Runs one `/v1/worker` socket: the hello handshake (API key and secret, protocol version), the
 * worker's registration and what it still runs, and every later frame to the work router or the
 * hosted tool router. The transport (hello timeout, pre-auth limits, heartbeats, the send buffer
 * bound) is its {@link PeerSocket}. When the socket goes, so does the worker, and its unfinished
 * work and calls go elsewhere.
 */
export function acceptWorkerSocket(ws: WebSocket, deps: WorkerSocketDeps, guards?: ConnectionGuards): void {
  const logger = deps.logger ?? silentLogger;
  const maxFrameBytes = deps.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const maxResultFrameBytes = Math.max(
    maxFrameBytes,
    deps.maxResultFrameBytes ?? DEFAULT_MAX_RESULT_FRAME_BYTES,
  );
  let worker: ConnectedWorker | undefined;

  const peer: PeerSocket<"worker-to-server"> = new PeerSocket(
    ws,
    {
      id: `w_${nanoid(12)}`,
      channel: "worker-to-server",
      limits: {
        maxFrameBytes,
        maxResultFrameBytes,
        maxBufferedBytes: deps.maxBufferedBytes ?? 8 * 1024 * 1024,
        slowReaderGraceMs: deps.slowReaderGraceMs ?? 5_000,
        heartbeatIntervalMs: deps.heartbeatIntervalMs,
        helloTimeoutMs: deps.helloTimeoutMs ?? 10_000,
      },
      logger,
      guards,
    },
    {
      helloTimeout: () =>
        refuse("invalid_frame", "no worker.hello within the time allowed", WorkerCloseCodes.protocol),
      invalid(error, buffer) {
        const { code, message, path } = error;
        if (!worker) {
          // Until hello succeeds a socket is not a worker: any failure ends the handshake.
          refuse(code, message, WorkerCloseCodes.protocol, path);
          return;
        }
        if (code === "frame_too_large") failOversizedResult(worker, buffer);
        send({ type: "error", code, message, ...(path === undefined ? {} : { path }) });
      },
      frame(frame) {
        if (worker) {
          onFrame(worker, frame);
          return;
        }
        if (frame.type !== "worker.hello") {
          refuse(
            "invalid_frame",
            `the first frame must be worker.hello, not ${frame.type}`,
            WorkerCloseCodes.protocol,
            "type",
          );
          return;
        }
        worker = hello(frame);
      },
      closed(code, reason) {
        if (!worker) return;
        const gone = worker;
        logger.info("worker disconnected", { workerId: gone.id, code, reason });
        if (deps.registry.remove(gone)) {
          deps.metrics?.workers.set(deps.registry.size);
          deps.work.onWorkerGone(gone);
          deps.tools.onWorkerGone(gone);
        }
      },
    },
  );

  function send(frame: ServerToWorkerFrame, text?: string): void {
    peer.send(text ?? frame);
  }

  function refuse(code: string, message: string, closeCode: number, path?: string): void {
    send({ type: "error", code, message, ...(path === undefined ? {} : { path }) });
    peer.close(closeCode, message);
  }

  /**
   * A `hosted.result` over the result limit (from a worker that did not check it) fails its call
   * once, as if the worker had sent `result_too_large`: the call is settled, so it is neither
   * left to its timeout nor delivered again.
   */
  function failOversizedResult(current: ConnectedWorker, buffer: Buffer): void {
    const big = oversizedResult(buffer, "hosted.result");
    if (!big) return;
    logger.warn("hosted result over the size limit; the call fails", {
      workerId: current.id,
      callId: big.callId,
      bytes: big.bytes,
      limit: maxResultFrameBytes,
    });
    deps.tools.onFrame(current, {
      type: "hosted.result",
      callId: big.callId,
      attempt: big.attempt ?? 1,
      result: resultTooLarge(big.bytes, maxResultFrameBytes),
    });
  }

  function hello(frame: WorkerToServerFrame & { type: "worker.hello" }): ConnectedWorker | undefined {
    if (frame.protocol !== PROTOCOL_VERSION) {
      refuse(
        "protocol_version",
        `this server speaks protocol ${PROTOCOL_VERSION}, the worker ${frame.protocol}`,
        WorkerCloseCodes.protocol,
        "protocol",
      );
      return undefined;
    }
    try {
      deps.checkApiKey(frame.apiKey, frame.secret);
    } catch (error) {
      logger.warn("worker refused", { workerId: frame.workerId, reason: (error as Error).message });
      refuse(
        "unauthorized",
        (error as Error).message,
        WorkerCloseCodes.unauthorized,
        frame.secret === undefined ? "secret" : undefined,
      );
      return undefined;
    }
    // A worker is the operator's own process: past hello its bytes are not charged to a quota.
    peer.authenticate(undefined, { byteQuotas: false });
    const connected: ConnectedWorker = {
      id: frame.workerId,
      capacity: frame.capacity,
      handles: frame.handles,
      hosts: hostsFromHello(frame.hosts),
      reserved: new Set(),
      calls: new Set(),
      lastGivenAt: 0,
      maxFrameBytes: frame.maxFrameBytes ?? DEFAULT_WORKER_RECEIVE_BYTES,
      ...(frame.conversationCache ? { conversations: new KeptConversations(frame.conversationCache) } : {}),
      send,
      terminate: () => peer.terminate(),
      close: (code, reason) => peer.close(code, reason),
    };
    const replaced = deps.registry.add(connected);
    // Ready first: the worker reads nothing else before it, and adopting below may send it work.
    send({
      type: "worker.ready",
      protocol: PROTOCOL_VERSION,
      workerId: connected.id,
      heartbeatIntervalMs: deps.heartbeatIntervalMs,
      maxFrameBytes,
      maxResultFrameBytes,
    });
    // What the worker still runs is its own before anything else is decided, so the replaced
    // socket's leftovers (below) do not hand it to someone else.
    deps.work.adopt(connected, frame.running.work);
    deps.tools.adopt(connected, frame.running.calls);
    if (replaced) {
      logger.info("worker replaced by a newer socket", { workerId: frame.workerId });
      deps.work.onWorkerGone(replaced);
      deps.tools.onWorkerGone(replaced);
      // The old socket is told why before it closes (4409), so a worker that runs twice by
      // mistake with one workerId sees it in its logs instead of a bare 1006.
      replaced.send({
        type: "error",
        code: "conflict",
        message: `a newer socket of worker ${frame.workerId} replaced this one; give each worker process its own workerId`,
      });
      if (replaced.close) replaced.close(WorkerCloseCodes.replaced, "replaced by a newer socket");
      else replaced.terminate();
    }
    reportUnknownAgents(frame.hosts);
    deps.metrics?.workers.set(deps.registry.size);
    logger.info("worker connected", {
      workerId: connected.id,
      capacity: connected.capacity,
      hosts: frame.hosts.map((h) => `${h.agent}:${h.tools.map((t) => t.name).join(",")}`),
      running: frame.running,
    });
    deps.work.pump();
    return connected;
  }

  /** Tells the worker which of the agents it hosts tools for this server does not have. */
  function reportUnknownAgents(hosts: ReadonlyArray<{ agent: string }>): void {
    hosts.forEach((host, index) => {
      if (deps.agentExists && !deps.agentExists(host.agent)) {
        send({
          type: "error",
          code: "not_found",
          message: `hosts.${index}.agent: this server has no agent ${host.agent}; no session will call these tools`,
          path: `hosts.${index}.agent`,
        });
      }
    });
  }

  function onFrame(current: ConnectedWorker, frame: WorkerToServerFrame): void {
    switch (frame.type) {
      case "ping":
      case "pong":
        // Answered by the peer socket once the worker said hello.
        return;
      case "worker.hello":
        send({ type: "error", code: "invalid_frame", message: "worker.hello was already received" });
        return;
      case "load":
        current.capacity = frame.capacity;
        deps.work.pump();
        return;
      case "worker.hosts":
        // Turns that start from now on offer these tools; calls already routed keep their worker.
        current.hosts = hostsFromHello(frame.hosts);
        reportUnknownAgents(frame.hosts);
        logger.info("worker hosts changed", {
          workerId: current.id,
          tools: frame.hosts.reduce((n, host) => n + host.tools.length, 0),
        });
        return;
      case "work.accepted":
      case "work.done":
      case "answer":
        deps.work.onFrame(current, frame);
        return;
      case "hosted.progress":
      case "hosted.say":
      case "hosted.hold":
      case "hosted.approval":
      case "hosted.result":
        deps.tools.onFrame(current, frame);
        return;
    }
  }
}
