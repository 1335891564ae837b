// The floor's far end: connects out to the bench (as a worker connects to the server), and
// answers each `hosted.call` frame with a `hosted.result`. It parses and serializes JSON, which
// any JSON protocol must, and does nothing else: the least work a tool call can cost.
import WebSocket from "ws";
import { hostedResultFrame } from "../lookup-order";
import { failed, ready } from "./peer-runtime";

const url = process.argv[2];
if (!url) failed("usage: raw-ws-peer <ws url>");
const ws = new WebSocket(url);
ws.on("open", () => ready());
ws.on("error", failed);
ws.on("message", (data) => {
  const frame = JSON.parse(String(data)) as {
    callId: string;
    attempt: number;
    arguments: { order_id: string };
  };
  ws.send(JSON.stringify(hostedResultFrame(frame.callId, frame.attempt, frame.arguments.order_id)));
});
ws.on("close", () => process.exit(0));
