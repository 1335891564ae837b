// Chats with the support agent through a running server and worker:
//   PATCHBAY_URL=http://127.0.0.1:8787 PATCHBAY_API_KEY=... PATCHBAY_API_SECRET=... npm run chat -- "Where is order A1001?"
import { Client } from "@patchbay/client";
import { chat } from "./chat-script";

const baseUrl = process.env.PATCHBAY_URL ?? "http://127.0.0.1:8787";
const userId = process.env.CHAT_USER ?? "u_ada";
const backend = new Client({
  baseUrl,
  apiKey: process.env.PATCHBAY_API_KEY,
  secret: process.env.PATCHBAY_API_SECRET,
});
// Chat as the customer, with a user token the backend minted (as a page would): only a user's
// messages go to the worker first; a backend's own messages go straight to the model.
const customer = new Client({ baseUrl });
customer.setUser({ id: userId }, await backend.createUserToken(userId, { expiresIn: "10m" }));
const lines = process.argv.slice(2);
try {
  await chat(customer, userId, lines.length > 0 ? lines : ["Where is order A1001?"]);
} finally {
  customer.close();
  backend.close();
}
