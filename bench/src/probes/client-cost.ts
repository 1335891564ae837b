// Probe: what `@patchbay/client` itself costs per whole turn (scenario 4's client) and per page
// tool call (scenario 2's page), with no server, worker or `ws` in the way: the client runs
// here against a scripted socket (`createSocket`) that answers `hello`, `session.create` and
// `message.send` with the frames the real server sends (recorded with `turn-frames.ts --show`),
// and delivers each burst in its own turn of the event loop, as a socket does. What it measures
// is the client's own code: decoding and applying events, the page's tools, and the session
// lifecycle (a client and its session replaced every `--per-session` turns, as the bench's pool
// does). The scripted socket's own work is the same in both builds, so A/B runs compare.
//   node --import tsx src/probes/client-cost.ts [--turns 20000] [--calls 50000] [--per-session 10]
//     [--in-flight 64] [--rounds 3] [--entry <path of a built index.js, e.g. main's>]
// BENCH_HEAP_PROFILE=<file> writes a sampling heap profile of the first measured turn block
// (BENCH_HEAP_ALL=1: every allocation, see heap-sampling.ts).
import { performance } from "node:perf_hooks";
import type { WebSocketLike } from "@patchbay/protocol/runtime";
import { startGcStats, stopGcStats } from "./gc-stats";
import { startHeapSampling, stopHeapSampling } from "./heap-sampling";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const entryAt = process.argv.indexOf("--entry");
const entry = entryAt > 0 ? process.argv[entryAt + 1]! : "@patchbay/client";
const turns = arg("turns", 20_000);
const calls = arg("calls", 50_000);
const perSession = arg("per-session", 10);
const inFlight = arg("in-flight", 64);
const rounds = arg("rounds", 3);

const mod = (await import(entry)) as typeof import("@patchbay/client");
const { Client, Tools } = mod;
const { z } = await import("zod");

/** The client's socket shape, its state set by the script. */
type Fake = Omit<WebSocketLike, "readyState"> & { readyState: number };

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${(++counter).toString(36).padStart(12, "0")}`;

/** A socket with a scripted server behind it: one session per socket, seq counted per session. */
function scriptedSocket(): Fake {
  let seq = 0;
  let sessionId = "";
  const socket: Fake = {
    readyState: 0,
    onopen: null,
    onmessage: null,
    onclose: null,
    onerror: null,
    send(data) {
      const frame = JSON.parse(data) as Record<string, unknown>;
      switch (frame.type) {
        case "hello":
          burst([
            `{"type":"welcome","protocol":1,"connectionId":"${nextId("c")}","user":null,"heartbeatIntervalMs":15000,"maxFrameBytes":1048576,"maxResultFrameBytes":5242880}`,
          ]);
          return;
        case "session.create":
          sessionId = nextId("s");
          burst([
            `{"type":"session.opened","requestId":"${frame.requestId}","session":{"id":"${sessionId}","agent":"support","userId":"u_bench","metadata":{},"createdAt":1796189557000,"lastSeq":0}}`,
          ]);
          return;
        case "message.send":
          turnFrames(frame.commandId as string);
          return;
        case "tool.result":
          results.get(frame.callId as string)?.();
          return;
      }
    },
    close(code = 1000, reason = "") {
      if (socket.readyState === 3) return;
      socket.readyState = 3;
      setImmediate(() => socket.onclose?.({ code, reason }));
    },
  };
  const burst = (frames: string[]) =>
    setImmediate(() => {
      for (const data of frames) {
        if (socket.readyState !== 1) return;
        socket.onmessage?.({ data });
      }
    });
  const turnFrames = (commandId: string) => {
    const s = sessionId;
    const message = nextId("m");
    const response = nextId("r");
    const call = nextId("call");
    const reply = nextId("m");
    const toolItem = (status: string, extra = "") =>
      `{"type":"tool_call","id":"${call}","providerCallId":"call_ibb5ilvee1","name":"lookup_order","arguments":{"order_id":"A1001"},"status":"${status}","held":false,"attempt":1,"responseId":"${response}","createdAt":1796189557078,"location":"worker"${extra}}`;
    const result = `,"result":{"outcome":"completed","content":{"text":"{\\"order_id\\":\\"A1001\\",\\"status\\":\\"shipped\\",\\"eta\\":\\"2 days\\"}","images":[]},"held":false}`;
    const text = "Order A1001 is shipped, arriving in 2 days.";
    burst([
      `{"type":"message.created","commandId":"${commandId}","sessionId":"${s}","seq":${++seq},"item":{"type":"message","id":"${message}","role":"user","text":"Where is order A1001?","status":"completed","createdAt":1796189557077}}`,
      `{"type":"response.started","responseId":"${response}","commandId":"${commandId}","sessionId":"${s}","seq":${++seq}}`,
      `{"type":"conversation.updated","sessionId":"${s}","seq":${++seq},"item":${toolItem("pending")}}`,
    ]);
    burst([
      `{"type":"conversation.updated","sessionId":"${s}","seq":${++seq},"item":${toolItem("running")}}`,
    ]);
    burst([
      `{"type":"conversation.updated","sessionId":"${s}","seq":${++seq},"item":${toolItem("completed", result)}}`,
      `{"type":"conversation.updated","sessionId":"${s}","seq":${++seq},"item":{"type":"message","id":"${reply}","role":"assistant","text":"","status":"in_progress","responseId":"${response}","createdAt":1796189557095}}`,
      `{"type":"text.delta","responseId":"${response}","itemId":"${reply}","delta":"${text}","sessionId":"${s}","seq":${++seq}}`,
      `{"type":"message.completed","sessionId":"${s}","seq":${++seq},"item":{"type":"message","id":"${reply}","role":"assistant","text":"${text}","status":"completed","responseId":"${response}","createdAt":1796189557095}}`,
      `{"type":"response.completed","responseId":"${response}","commandId":"${commandId}","reason":"stop","text":"${text}","usage":{"inputTokens":114,"outputTokens":16},"sessionId":"${s}","seq":${++seq}}`,
    ]);
  };
  // The page rig: the server sends `tool.call` on this socket (see `callPage`).
  sockets.push({
    call(callId: string, done: () => void) {
      results.set(callId, () => {
        results.delete(callId);
        done();
      });
      burstOne(
        `{"type":"tool.call","sessionId":"${sessionId}","seq":${++seq},"call":{"id":"${callId}","name":"lookup_order","arguments":{"order_id":"A1001"}},"attempt":1,"timeoutMs":30000,"user":{"id":"u_bench"}}`,
      );
    },
  });
  const pending: string[] = [];
  const burstOne = (data: string) => {
    // The calls of one tick arrive together, as the server's tick writes send them.
    if (pending.push(data) === 1)
      setImmediate(() => {
        for (const frame of pending.splice(0)) socket.onmessage?.({ data: frame });
      });
  };
  setImmediate(() => {
    socket.readyState = 1;
    socket.onopen?.({});
  });
  return socket;
}

const results = new Map<string, () => void>();
const sockets: { call(callId: string, done: () => void): void }[] = [];
const createSocket = () => scriptedSocket() as never;
const options = { baseUrl: "http://127.0.0.1:1", apiKey: "pk_bench", secret: "sk_bench", createSocket };

async function openSession() {
  const client = new Client(options);
  const session = await client.agent("support").sessions.create({ userId: "u_bench" });
  return { client, session };
}

async function turnsBlock(n: number, lanes: number): Promise<void> {
  let left = n;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      let open = await openSession();
      let used = 0;
      while (left > 0) {
        left--;
        const reply = await open.session.responses.create("Where is order A1001?");
        if (!reply.text.startsWith("Order A1001")) throw new Error(`unexpected reply ${reply.text}`);
        if (++used >= perSession) {
          open.client.close();
          open = await openSession();
          used = 0;
        }
      }
      open.client.close();
    }),
  );
}

async function pageBlock(n: number, lanes: number): Promise<void> {
  const client = new Client(options);
  const tools = new Tools().register({
    name: "lookup_order",
    description: "Look up an order by its number.",
    parameters: z.object({ order_id: z.string() }),
    run: async ({ order_id }: { order_id: string }) =>
      JSON.stringify({ order_id, status: "shipped", eta: "2 days" }),
  });
  await client.agent("support").sessions.create({ tools, userId: "u_bench" });
  const page = sockets[sockets.length - 1]!;
  let left = n;
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (left > 0) {
        left--;
        await new Promise<void>((done) => page.call(`call_p${(next++).toString(36)}`, done));
      }
    }),
  );
  client.close();
}

function measure(name: string, unit: string, n: number, run: () => Promise<void>): Promise<void> {
  return (async () => {
    const heapFile = process.env.BENCH_HEAP_PROFILE;
    if (heapFile) await startHeapSampling();
    startGcStats();
    const cpu = process.cpuUsage();
    const start = performance.now();
    await run();
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    const gc = stopGcStats();
    if (heapFile) {
      await stopHeapSampling(heapFile);
      delete process.env.BENCH_HEAP_PROFILE;
    }
    console.log(
      `${name}: ${n} in ${wall.toFixed(0)} ms; CPU per ${unit} ${((used.user + used.system) / n).toFixed(1)} µs; young bytes ${Math.round(gc.youngBytes / n)}, promoted ${Math.round(gc.promotedBytes / n)}, scavenges ${(gc.scavengeUs / n).toFixed(1)} µs`,
    );
  })();
}

await turnsBlock(Math.min(turns, 5000), inFlight);
await pageBlock(Math.min(calls, 10_000), inFlight);
for (let round = 0; round < rounds; round++) {
  await measure(`turn, ${inFlight} sessions, replaced every ${perSession}`, "turn", turns, () =>
    turnsBlock(turns, inFlight),
  );
  await measure("turn, 1 at a time", "turn", Math.ceil(turns / 10), () =>
    turnsBlock(Math.ceil(turns / 10), 1),
  );
  await measure(`call, ${inFlight} in flight`, "call", calls, () => pageBlock(calls, inFlight));
}
process.exit(0);
