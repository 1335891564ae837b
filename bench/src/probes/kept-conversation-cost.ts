// Probe: what a `hosted.call`'s conversation costs each end per call, sent whole or to a worker
// that keeps conversations (worker.hello.conversationCache), in one process: the server's side
// (fitHostedCall, or KeptConversations.fit, which encode the frame) and the worker's (decodeFrame,
// then ConversationCache.read to rebuild the whole). Sessions take turns as scenario 4's do: each
// turn adds a user message and a call (running), and completes the previous call and answer, so
// four items are new or changed per call; the window is the last `--window` items. CPU time, in
// alternating blocks (the machine's load moves both alike).
//   node --import tsx src/probes/kept-conversation-cost.ts [--sessions 64] [--turns 10,30,100] [--window 50] [--blocks 6]
import { type ConversationItem, decodeFrame, type ServerToWorkerFrame } from "@patchbay/protocol";
import { ConversationCache } from "../../../packages/dispatch/src/conversation-cache";
import { fitHostedCall } from "../../../packages/server/src/workers/fit-hosted-call";
import { KeptConversations } from "../../../packages/server/src/workers/kept-conversations";

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

const flag = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const sessions = Number(flag("sessions", "64"));
const turnCounts = flag("turns", "10,30,100").split(",").map(Number);
const windowSize = Number(flag("window", "50"));
const blocks = Number(flag("blocks", "6"));
const MAX_BYTES = 16 * 1024 * 1024;

const at = 1_767_225_600_000;
const user = (s: number, t: number): ConversationItem =>
  Object.freeze({
    type: "message",
    id: `m_u${s}_${t}`,
    role: "user",
    text: `Where is order A${t}?`,
    status: "completed",
    createdAt: at + t,
  }) as ConversationItem;
const callItem = (s: number, t: number, done: boolean): ConversationItem =>
  Object.freeze({
    type: "tool_call",
    id: `call_${s}_${t}`,
    providerCallId: `toolu_${t}`,
    name: "lookup_order",
    arguments: { order_id: `A${t}` },
    location: "worker",
    status: done ? "completed" : "running",
    held: false,
    attempt: 1,
    ...(done
      ? {
          result: {
            outcome: "completed",
            content: { text: `{"order_id":"A${t}","status":"shipped"}`, images: [] },
          },
        }
      : {}),
    responseId: `r_${s}_${t}`,
    createdAt: at + t,
  }) as ConversationItem;
const answer = (s: number, t: number): ConversationItem =>
  Object.freeze({
    type: "message",
    id: `m_a${s}_${t}`,
    role: "assistant",
    text: `Order A${t} has shipped.`,
    status: "completed",
    responseId: `r_${s}_${t}`,
    createdAt: at + t,
  }) as ConversationItem;

/** Each session's conversation after `turns` turns, the last call running, as the server holds it. */
function conversations(turns: number): ConversationItem[][][] {
  return Array.from({ length: sessions }, (_, s) => {
    const byTurn: ConversationItem[][] = [];
    const done: ConversationItem[] = [];
    for (let t = 0; t < turns; t++) {
      const now = [...done, user(s, t), callItem(s, t, false)];
      byTurn.push(now.slice(-windowSize));
      done.push(user(s, t), callItem(s, t, true), answer(s, t));
    }
    return byTurn;
  });
}

function frame(s: number, t: number, conversation: ConversationItem[]): HostedCall {
  return {
    type: "hosted.call",
    callId: `call_${s}_${t}`,
    attempt: 1,
    agent: "support",
    sessionId: `s_${s}`,
    tool: "lookup_order",
    arguments: { order_id: `A${t}` },
    user: { id: "u_1" },
    conversation,
    timeoutMs: 30_000,
  };
}

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * CPU µs per call of each end over all turns of all sessions, sessions taking turns in order: the
 * server's side encodes every frame first, then the worker's side reads them in the same order.
 */
function run(
  byTurn: ConversationItem[][][],
  kept: boolean,
): { server: number; worker: number; bytes: number } {
  const serverSide = kept ? new KeptConversations({ sessions: 1_000, bytes: 64 * 1024 * 1024 }) : undefined;
  const workerSide = new ConversationCache();
  const turns = byTurn[0]!.length;
  const calls: HostedCall[] = [];
  for (let t = 0; t < turns; t++) for (let s = 0; s < sessions; s++) calls.push(frame(s, t, byTurn[s]![t]!));
  const texts: string[] = [];
  const start = cpu();
  for (const call of calls) {
    const fitted = serverSide ? serverSide.fit(call, MAX_BYTES) : fitHostedCall(call, MAX_BYTES);
    if (!fitted.ok) throw new Error("did not fit");
    texts.push(fitted.text);
  }
  const encoded = cpu();
  let items = 0;
  for (const text of texts) {
    const decoded = decodeFrame(text, { channel: "server-to-worker" });
    if (!decoded.ok || decoded.frame.type !== "hosted.call") throw new Error("did not decode");
    const whole = workerSide.read(decoded.frame);
    if (whole === undefined) throw new Error("out of step");
    items += whole.length;
  }
  const read = cpu();
  if (items !== calls.reduce((sum, call) => sum + call.conversation.length, 0)) throw new Error("items lost");
  const bytes = texts.reduce((sum, text) => sum + text.length, 0);
  return {
    server: (encoded - start) / calls.length,
    worker: (read - encoded) / calls.length,
    bytes: bytes / calls.length,
  };
}

for (const turns of turnCounts) {
  const byTurn = conversations(turns);
  const figures: Record<"whole" | "kept", Array<ReturnType<typeof run>>> = { whole: [], kept: [] };
  run(byTurn, false);
  run(byTurn, true);
  for (let i = 0; i < blocks; i++) {
    figures.whole.push(run(byTurn, false));
    figures.kept.push(run(byTurn, true));
  }
  const median = (list: number[]) => [...list].sort((x, y) => x - y)[Math.floor(list.length / 2)]!;
  for (const side of ["whole", "kept"] as const) {
    const f = figures[side];
    console.log(
      `${turns} turns a session, ${side}: server ${median(f.map((x) => x.server)).toFixed(1)} µs, worker ${median(f.map((x) => x.worker)).toFixed(1)} µs per call, ${Math.round(median(f.map((x) => x.bytes)))} B a frame`,
    );
  }
}
