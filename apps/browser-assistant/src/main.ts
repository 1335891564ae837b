import { Client, type Session } from "@patchbay/client";
import { renderApprovals } from "./approval-prompt";
import { element, renderConversation } from "./chat-view";
import { pageTools } from "./page-tools";
import "./style.css";

const SESSION_KEY = "patchbay.sessionId";
const byId = (id: string) => document.getElementById(id)!;
const log = byId("log");
const approvals = byId("approvals");
const notices = byId("notices");
const state = byId("state");
const form = byId("composer") as HTMLFormElement;
const input = byId("input") as HTMLInputElement;

/** The user token comes from this app's backend, which mints it with the Patchbay secret. */
async function fetchToken(): Promise<{ user: { id: string }; token: string }> {
  const response = await fetch("/api/token", { method: "POST" });
  if (!response.ok) throw new Error(`token endpoint: ${response.status}`);
  return response.json();
}

const { user, token } = await fetchToken();
// Same origin: the page's server forwards /v1 (HTTP and the session socket) to Patchbay.
const client = new Client({
  baseUrl: location.origin,
  tokenProvider: async () => (await fetchToken()).token,
});
client.setUser(user, token);
client.on("state", (s) => {
  state.textContent = s;
});

const tools = pageTools((note) => notices.append(element("div", "notice", note)));
const agent = client.agent("assistant");

/** A reload keeps the session: its id lives in sessionStorage, and resume replays the conversation. */
async function openSession(): Promise<Session> {
  const saved = sessionStorage.getItem(SESSION_KEY);
  if (saved) {
    try {
      return await agent.sessions.resume(saved, { tools });
    } catch {
      sessionStorage.removeItem(SESSION_KEY); // deleted or expired: start a new one
    }
  }
  const session = await agent.sessions.create({ tools });
  sessionStorage.setItem(SESSION_KEY, session.id);
  return session;
}

const session = await openSession();
document.body.dataset.session = session.id;
const redraw = () => {
  renderConversation(log, session.conversation, new Set(session.approvals.map((a) => a.callId)));
  renderApprovals(approvals, session);
};
session.on("conversation", redraw);
session.on("approval", redraw);
session.on("approvalResolved", redraw);
redraw();

form.onsubmit = (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  session.responses
    .create(text)
    .catch((error: unknown) => notices.append(element("div", "notice", (error as Error).message)));
};
byId("stop").onclick = () => void session.interrupt();
byId("new").onclick = () => {
  sessionStorage.removeItem(SESSION_KEY);
  location.reload();
};
document.body.dataset.ready = "true";
