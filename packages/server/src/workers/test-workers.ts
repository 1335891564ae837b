import { DEFAULT_WORKER_RECEIVE_BYTES, type ServerToWorkerFrame, type ToolSpec } from "@patchbay/protocol";
import type { ConnectedWorker } from "./worker-registry";

/** A worker as the routers see it, recording every frame sent to it. For the routers' tests. */
export interface RecordingWorker extends ConnectedWorker {
  sent: ServerToWorkerFrame[];
  terminated: boolean;
}

export function recordingWorker(
  id: string,
  options: {
    capacity?: number;
    messages?: boolean;
    calls?: boolean;
    hosts?: Record<string, { tools: string[]; toolTimeoutMs?: number }>;
    maxFrameBytes?: number;
  } = {},
): RecordingWorker {
  const hosts = new Map<string, { tools: Map<string, ToolSpec>; toolTimeoutMs?: number }>();
  for (const [agent, hosted] of Object.entries(options.hosts ?? {})) {
    const tools = new Map<string, ToolSpec>(
      hosted.tools.map((name) => [
        name,
        { name, description: `${name} tool`, parameters: { type: "object" } },
      ]),
    );
    hosts.set(
      agent,
      hosted.toolTimeoutMs === undefined ? { tools } : { tools, toolTimeoutMs: hosted.toolTimeoutMs },
    );
  }
  const worker: RecordingWorker = {
    id,
    capacity: options.capacity ?? 1,
    handles: { messages: options.messages ?? true, calls: options.calls ?? true },
    hosts,
    reserved: new Set(),
    calls: new Set(),
    lastGivenAt: 0,
    maxFrameBytes: options.maxFrameBytes ?? DEFAULT_WORKER_RECEIVE_BYTES,
    sent: [],
    terminated: false,
    send: (frame) => {
      worker.sent.push(frame);
    },
    terminate: () => {
      worker.terminated = true;
    },
  };
  return worker;
}

/** The frames of one type a recording worker was sent. */
export function sentOf<T extends ServerToWorkerFrame["type"]>(
  worker: RecordingWorker,
  type: T,
): Array<ServerToWorkerFrame & { type: T }> {
  return worker.sent.filter((f): f is ServerToWorkerFrame & { type: T } => f.type === type);
}
