// The attackers of scenario 8, in a process of their own: the chaos suite's attack
// (packages/e2e/test/chaos.test.ts) run in rounds while the parent says so. Three users each
// send mutated frames, a ReDoS-bait message for a tool whose schema has `^(a|a)*$`, a
// `tools.update` with a looping `$ref` and a 1.1 MB message, and every few rounds a new socket
// opens ten idle sessions. A socket the server closes (rate limit, flood) is replaced by a new
// socket of the same user, so the user's quotas (bytes per second, sessions) hold across them.
import { createUserToken } from "@patchbay/server";
import { mutatedFrame } from "../../../packages/e2e/fixtures/chaos-inputs";
import { HOSTILE_SECRET, ProtocolSocket } from "../hostile-agent";
import { onRequest, ready } from "./peer-runtime";

const url = process.argv[2]!;
const MAX_IDLE_SOCKETS = 20;

interface Attacker {
  socket: ProtocolSocket;
  sessionId: string;
}

let idleUsers = 0;
const open = async (userId: string) =>
  ProtocolSocket.open(url, await createUserToken(HOSTILE_SECRET, userId));

async function attacker(k: number): Promise<Attacker> {
  const socket = await open(`u_attacker_${k}`);
  const sessionId = await socket.create("chaos", {
    tools: [
      {
        name: "check_code",
        description: "Checks.",
        parameters: { type: "object", properties: { code: { type: "string", pattern: "^(a|a)*$" } } },
      },
    ],
  });
  return { socket, sessionId };
}

const big = "x".repeat(1_100_000);
let attackers: Attacker[] = [];
const idle: ProtocolSocket[] = [];
let running = false;
let loop: Promise<void> = Promise.resolve();
let frames = 0;
let round = 0;

async function attackRound(): Promise<void> {
  attackers = await Promise.all(attackers.map((a, k) => (a.socket.closed ? attacker(k) : a)));
  for (const [k, { socket, sessionId }] of attackers.entries()) {
    for (let i = 0; i < 25; i++) {
      const frame = mutatedFrame(round * 100 + k * 25 + i, sessionId);
      if (typeof frame === "string") socket.send(frame);
      else socket.ws.send(frame, { binary: (round + i) % 2 === 0 });
      frames++;
    }
    socket.send({
      type: "message.send",
      sessionId,
      commandId: `redos_${round}_${k}`,
      text: `check ${"a".repeat(40 + (round % 20))}!`,
    });
    socket.send({
      type: "tools.update",
      sessionId,
      tools: [
        { name: "bad", description: "d", parameters: { type: "object", properties: { a: { $ref: "#" } } } },
      ],
    });
    socket.send({ type: "message.send", sessionId, commandId: `big_${round}`, text: big });
    frames += 3;
  }
  if (round % 4 === 0) {
    const socket = await open(`u_idle_${idleUsers++}`);
    for (let s = 0; s < 10; s++) await socket.create("chaos");
    idle.push(socket);
    if (idle.length > MAX_IDLE_SOCKETS) idle.shift()?.close();
  }
  round++;
  await new Promise((resolve) => setTimeout(resolve, 50));
}

onRequest(async (message) => {
  if (message.type === "start") {
    if (attackers.length === 0) attackers = await Promise.all([0, 1, 2].map((k) => attacker(k)));
    running = true;
    loop = (async () => {
      while (running) await attackRound();
    })();
    return {};
  }
  if (message.type === "stop") {
    running = false;
    await loop;
    return { frames };
  }
  throw new Error(`unknown request ${String(message.type)}`);
});
ready();
