// Probe: what decoding a turn's `hosted.call` costs the worker (decodeFrame, JSON.parse included)
// by the number of conversation items it carries, for two builds of @patchbay/protocol loaded
// side by side in this process and timed (CPU time) in alternating blocks (the machine's load moves both
// alike). Items are shaped like a whole turn's (scenario 4): a user message, the hosted tool's
// call with its result, the assistant's answer.
//   node --import tsx src/probes/hosted-call-decode.ts [--a <protocol entry>] [--b <protocol entry>]
//     [--blocks 15] [--items 0,6,15,40]
// --a defaults to /work/main's build, --b to this worktree's.
import { fileURLToPath } from "node:url";

const flag = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const here = fileURLToPath(new URL("../../../packages/protocol/dist/index.js", import.meta.url));
const sides = {
  A: flag("a", "/work/main/packages/protocol/dist/index.js"),
  B: flag("b", here),
};
const blocks = Number(flag("blocks", "15"));
const counts = flag("items", "0,6,15,40").split(",").map(Number);

type Decode = (text: string, options: { channel: "server-to-worker" }) => { ok: boolean };
const decoders: Record<string, Decode> = {};
for (const [side, path] of Object.entries(sides))
  decoders[side] = ((await import(path)) as { decodeFrame: Decode }).decodeFrame;

/** The conversation of `n` items, three a turn, the last the running call. */
function conversation(n: number): unknown[] {
  const items: unknown[] = [];
  for (let turn = 0; items.length < n; turn++) {
    const at = 1_767_225_600_000 + turn * 1000;
    items.push({
      type: "message",
      id: `m_u${turn}`,
      role: "user",
      text: `Where is order A${turn}?`,
      status: "completed",
      createdAt: at,
    });
    items.push({
      type: "tool_call",
      id: `call_${turn}`,
      providerCallId: `call_${turn}`,
      name: "lookup_order",
      arguments: { order_id: `A${turn}` },
      location: "worker",
      status: "completed",
      held: false,
      attempt: 1,
      result: {
        outcome: "completed",
        content: { text: `{"order_id":"A${turn}","status":"shipped"}`, images: [] },
      },
      responseId: `r_${turn}`,
      createdAt: at + 1,
    });
    items.push({
      type: "message",
      id: `m_a${turn}`,
      role: "assistant",
      text: "It shipped yesterday.",
      status: "completed",
      responseId: `r_${turn}`,
      createdAt: at + 2,
    });
  }
  return items.slice(0, n);
}

function frameText(n: number): string {
  return JSON.stringify({
    type: "hosted.call",
    callId: "call_V1StGXR8Z5jdHi6B",
    attempt: 1,
    agent: "support",
    sessionId: "s_V1StGXR8Z5jdHi6B",
    tool: "lookup_order",
    arguments: { order_id: "A1" },
    user: { id: "u_1" },
    conversation: conversation(n),
    timeoutMs: 30_000,
  });
}

/**
 * CPU µs per decode (this process's user and system time, which a wait for a CPU does not add
 * to) over a block long enough to time (about 50 ms).
 */
function block(decode: Decode, text: string): number {
  const reps = Math.max(200, Math.round(2_000_000 / text.length));
  const start = process.cpuUsage();
  for (let i = 0; i < reps; i++)
    if (!decode(text, { channel: "server-to-worker" }).ok) throw new Error("refused");
  const used = process.cpuUsage(start);
  return (used.user + used.system) / reps;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const parseOnly: Decode = (text) => ({ ok: JSON.parse(text) !== null });
console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
for (const n of counts) {
  const text = frameText(n);
  const times: Record<string, number[]> = { A: [], B: [], parse: [] };
  for (let b = 0; b < 3; b++) for (const side of ["A", "B"]) block(decoders[side]!, text); // warm up
  for (let b = 0; b < blocks; b++) {
    for (const side of b % 2 ? ["B", "A"] : ["A", "B"]) times[side]!.push(block(decoders[side]!, text));
    times.parse!.push(block(parseOnly, text));
  }
  console.log(
    `${String(n).padStart(3)} items (${text.length} B): A ${median(times.A!).toFixed(1)} µs, B ${median(times.B!).toFixed(1)} µs, JSON.parse alone ${median(times.parse!).toFixed(1)} µs (median of ${blocks} blocks)`,
  );
}
