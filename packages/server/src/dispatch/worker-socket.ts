import {
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_RESULT_FRAME_BYTES,
  DEFAULT_WORKER_RECEIVE_BYTES,
  decodeFrame,
  PROTOCOL_VERSION,
  resultTooLarge,
  type ServerToWorkerFrame,
  type WorkerToServerFrame,
} from "@patchbay/protocol";
import WebSocket from "ws";
import { type Logger, silentLogger } from "../logger";
import { oversizedResult } from "../oversized-result";
import type { DispatchMetrics } from "./dispatch-metrics";
import type { WorkRouter } from "./work-router";
import { type ConnectedWorker, hostsFromHello, type WorkerRegistry } from "./worker-registry";
import type { WorkerToolRouter } from "./worker-tool-router";

/**
 * What a worker socket needs from the rest of the server.
 *
 * @example
 * ```ts
 * acceptWorkerSocket(ws, { checkApiKey, registry, work, tools, heartbeatIntervalMs: 15_000 });
 * ```
 */
export interface WorkerSocketDeps {
  /** Throws when the key or secret is wrong. */
  checkApiKey: (apiKey: string, secret: string | undefined) => void;
  registry: WorkerRegistry;
  work: WorkRouter;
  tools: WorkerToolRouter;
  /** How often the server pings; a worker silent for two intervals is dropped. */
  heartbeatIntervalMs: number;
  /** How long a new socket has to say hello. Default 10 s. */
  helloTimeoutMs?: number;
  /** Largest frame a worker may send, results aside. Default 5 MiB. */
  maxFrameBytes?: number;
  /** Largest `hosted.result` a worker may send. Default 8 MiB. */
  maxResultFrameBytes?: number;
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
  heartbeat: 4408,
  /** The server is shutting down. */
  shutdown: 1001,
} as const;

/**
 * Runs one `/v1/worker` socket: the hello handshake (API key and secret, protocol version), the
 * worker's registration and what it still runs, heartbeats both ways, and every later frame to
 * the work router or the hosted tool router. When the socket goes, so does the worker, and its
 * unfinished work and calls go elsewhere.
 *
 * @example
 * ```ts
 * wss.on("connection", (ws) => acceptWorkerSocket(ws, deps));
 * ```
 */
export function acceptWorkerSocket(ws: WebSocket, deps: WorkerSocketDeps): void {
  const logger = deps.logger ?? silentLogger;
  const maxFrameBytes = deps.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const maxResultFrameBytes = Math.max(
    maxFrameBytes,
    deps.maxResultFrameBytes ?? DEFAULT_MAX_RESULT_FRAME_BYTES,
  );
  const send = (frame: ServerToWorkerFrame, text?: string) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(text ?? JSON.stringify(frame));
  };
  const refuse = (code: string, message: string, closeCode: number, path?: string) => {
    send({ type: "error", code, message, ...(path === undefined ? {} : { path }) });
    ws.close(closeCode, message.slice(0, 120));
  };

  let worker: ConnectedWorker | undefined;
  let lastHeard = Date.now();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let pings = 0;
  const helloTimer = setTimeout(() => {
    if (!worker)
      refuse("invalid_frame", "no worker.hello within the time allowed", WorkerCloseCodes.protocol);
  }, deps.helloTimeoutMs ?? 10_000);

  ws.on("message", (data, isBinary) => {
    lastHeard = Date.now();
    const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const decoded = decodeFrame(isBinary ? new Uint8Array(buffer) : buffer.toString("utf8"), {
      channel: "worker-to-server",
      maxBytes: maxFrameBytes,
      maxResultBytes: maxResultFrameBytes,
    });
    if (!decoded.ok) {
      const { code, message, path } = decoded.error;
      if (!worker) {
        // Until hello succeeds a socket is not a worker: any failure ends the handshake.
        refuse(code, message, WorkerCloseCodes.protocol, path);
        return;
      }
      if (code === "frame_too_large") failOversizedResult(worker, buffer);
      send({ type: "error", code, message, ...(path === undefined ? {} : { path }) });
      return;
    }
    const frame = decoded.frame;
    if (!worker) {
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
      return;
    }
    onFrame(worker, frame);
  });

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
    clearTimeout(helloTimer);
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
    const connected: ConnectedWorker = {
      id: frame.workerId,
      capacity: frame.capacity,
      handles: frame.handles,
      hosts: hostsFromHello(frame.hosts),
      reserved: new Set(),
      calls: new Set(),
      lastGivenAt: 0,
      maxFrameBytes: frame.maxFrameBytes ?? DEFAULT_WORKER_RECEIVE_BYTES,
      send,
      terminate: () => ws.terminate(),
      close: (code, reason) => {
        ws.close(code, reason);
        // A peer that does not finish the closing handshake is cut after a second.
        setTimeout(() => ws.terminate(), 1_000).unref();
      },
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
    heartbeat = setInterval(() => {
      if (Date.now() - lastHeard > 2 * deps.heartbeatIntervalMs) {
        logger.warn("worker missed its heartbeats; dropping it", { workerId: connected.id });
        ws.close(WorkerCloseCodes.heartbeat, "heartbeat timeout");
        // A peer that does not answer pings will not finish a closing handshake either.
        ws.terminate();
        return;
      }
      // A nonce, so a worker's pong can be told apart from a late answer to an earlier ping.
      pings += 1;
      send({ type: "ping", nonce: `s${pings}` });
    }, deps.heartbeatIntervalMs);
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
        send({ type: "pong", ...(frame.nonce === undefined ? {} : { nonce: frame.nonce }) });
        return;
      case "pong":
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
      case "hosted.result":
        deps.tools.onFrame(current, frame);
        return;
    }
  }

  ws.on("error", (error) => logger.debug("worker socket error", { error }));
  ws.on("close", (code, reason) => {
    clearTimeout(helloTimer);
    clearInterval(heartbeat);
    if (!worker) return;
    const gone = worker;
    logger.info("worker disconnected", { workerId: gone.id, code, reason: String(reason) });
    if (deps.registry.remove(gone)) {
      deps.metrics?.workers.set(deps.registry.size);
      deps.work.onWorkerGone(gone);
      deps.tools.onWorkerGone(gone);
    }
  });
}
