// The page: a chat with the agent through @patchbay/client (bundled by src/app.ts with esbuild).
// The user token comes from this app's /api/token; the page never sees the secret.
import { Client, type ConversationItem } from "@patchbay/client";

const byId = (id: string) => document.getElementById(id)!;
const log = byId("log");
const form = byId("composer") as HTMLFormElement;
const input = byId("input") as HTMLInputElement;

async function fetchToken(): Promise<{ user: { id: string }; token: string; patchbayUrl: string }> {
  const response = await fetch("/api/token", { method: "POST" });
  if (!response.ok) throw new Error(`token endpoint answered ${response.status}`);
  return response.json();
}

const first = await fetchToken();
const client = new Client({
  baseUrl: first.patchbayUrl,
  tokenProvider: async () => (await fetchToken()).token,
});
client.setUser(first.user, first.token);
const session = await client.agent("assistant").sessions.create();

function render(items: readonly ConversationItem[]): void {
  log.replaceChildren(
    ...items.map((item) => {
      const line = document.createElement("p");
      if (item.type === "message") {
        line.className = item.role;
        line.textContent = item.text;
      } else {
        line.className = "step";
        line.textContent = `${item.displayTitle ?? item.name}: ${item.status}`;
      }
      return line;
    }),
  );
}
session.on("conversation", () => render(session.conversation));

form.onsubmit = (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  // A failed turn carries a neutral message and a reference the server logged; show that.
  session.responses.create(text).catch((error: unknown) => {
    const line = document.createElement("p");
    line.className = "notice";
    line.textContent = (error as Error).message;
    log.append(line);
  });
};
document.body.dataset.ready = "true";
