// The reload test page: one slow page tool whose runs are counted in localStorage (which outlives
// the page), and a session kept in sessionStorage and resumed on load, the way
// docs/guides/tools-in-the-browser.md says. ?server=http://127.0.0.1:PORT&user=u_1&token=JWT
import { Client, type ConversationItem, Tools } from "@patchbay/client";

const params = new URLSearchParams(location.search);
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const tools = new Tools().register({
  name: "save_draft",
  description: "Saves the user's draft",
  run: async () => {
    localStorage.setItem("runs", String(Number(localStorage.getItem("runs") ?? "0") + 1));
    await new Promise((resolve) => setTimeout(resolve, Number(params.get("toolMs") ?? "2000")));
    return "saved";
  },
});

function render(items: readonly ConversationItem[]): void {
  $("conversation").replaceChildren(
    ...items.map((item) => {
      const li = document.createElement("li");
      li.dataset.type = item.type;
      if (item.type === "tool_call") {
        li.dataset.status = item.status;
        li.dataset.attempt = String(item.attempt);
        li.textContent = `${item.name} (${item.status}) ${item.result?.content.text ?? ""}`;
      } else {
        li.textContent = `${item.role}: ${item.text}`;
      }
      return li;
    }),
  );
}

async function main(): Promise<void> {
  const client = new Client({ baseUrl: params.get("server") ?? location.origin });
  client.setUser({ id: params.get("user") ?? "anonymous" }, params.get("token") ?? "");
  const { sessions } = client.agent("drafts");
  const saved = sessionStorage.getItem("session");
  const session = saved ? await sessions.resume(saved, { tools }) : await sessions.create({ tools });
  sessionStorage.setItem("session", session.id);
  $("session").textContent = session.id;
  render(session.conversation);
  session.on("conversation", render);
  session.on("responseCompleted", (event) => {
    $("reply").textContent = event.text;
  });
  $("ready").textContent = "ready";
  const form = $<HTMLFormElement>("ask");
  form.querySelector("button")!.disabled = false;
  form.onsubmit = (event) => {
    event.preventDefault();
    void session.responses.create($<HTMLInputElement>("text").value).catch(() => {});
  };
}

main().catch((error: Error) => {
  $("error").textContent = error.message;
});
