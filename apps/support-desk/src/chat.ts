// Chats with the support agent through a running server and worker:
//   PATCHBAY_URL=http://127.0.0.1:8787 PATCHBAY_API_KEY=... PATCHBAY_API_SECRET=... pnpm chat "Where is order A1001?"
import { Client } from "@patchbay/client";
import { chat } from "./chat-script";

const client = new Client({
  baseUrl: process.env.PATCHBAY_URL ?? "http://127.0.0.1:8787",
  apiKey: process.env.PATCHBAY_API_KEY,
  secret: process.env.PATCHBAY_API_SECRET,
});
const lines = process.argv.slice(2);
try {
  await chat(client, process.env.CHAT_USER ?? "u_ada", lines.length > 0 ? lines : ["Where is order A1001?"]);
} finally {
  client.close();
}
