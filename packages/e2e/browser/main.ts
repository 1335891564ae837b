// The test page: a session from the browser build of @patchbay/client with one page tool that
// needs approval (the real Geolocation API), and one that draws a picture (its image is checked by
// the chunk the client loads when a tool first returns images). Settings come from the query string, so the test can
// point it at a server it started: ?server=http://127.0.0.1:PORT&user=u_1&token=JWT
import { type ApprovalRequest, Client, type ConversationItem, ToolOutput, Tools } from "@patchbay/client";

const params = new URLSearchParams(location.search);
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function show(error: unknown): void {
  const e = error as { code?: string; message?: string };
  $("error").textContent = `${e.code ?? "error"}: ${e.message ?? String(error)}`;
}

const tools = new Tools().register({
  name: "get_location",
  description: "Where the person is. Only call it when the answer depends on it.",
  parameters: {
    type: "object",
    properties: { reason: { type: "string", description: "why you need it, in a few words" } },
    required: ["reason"],
  },
  displayTitle: "Checking where you are",
  approval: {
    title: "Share your location for {reason}?",
    reasonArgument: "reason",
    allowTitle: "Share",
    declineTitle: "Not now",
  },
  run: () =>
    new Promise((resolve, reject) =>
      navigator.geolocation.getCurrentPosition(
        ({ coords }) => resolve({ latitude: coords.latitude, longitude: coords.longitude }),
        (error) => reject(new Error(error.message)),
      ),
    ),
});

// A 1x1 PNG drawn on a canvas, as the bytes a page tool would return.
tools.register({
  name: "draw_dot",
  description: "Draws a dot and shows it.",
  parameters: { type: "object", properties: {} },
  run: async () => {
    const canvas = document.createElement("canvas");
    canvas.width = 1;
    canvas.height = 1;
    const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, "image/png"));
    if (!blob) throw new Error("the canvas gave no PNG");
    return new ToolOutput({ text: "a dot", images: [new Uint8Array(await blob.arrayBuffer())] });
  },
});

function renderConversation(items: readonly ConversationItem[]): void {
  $("conversation").replaceChildren(
    ...items.map((item) => {
      const li = document.createElement("li");
      li.dataset.type = item.type;
      if (item.type === "message") {
        li.dataset.role = item.role;
        li.textContent = `${item.role}: ${item.text}`;
      } else {
        li.dataset.status = item.status;
        li.textContent = `${item.displayTitle ?? item.name} (${item.status})${item.progress ? ` ${item.progress}` : ""}`;
      }
      return li;
    }),
  );
}

function renderApprovals(requests: ApprovalRequest[], decide: (id: string, allowed: boolean) => void): void {
  $("approvals").replaceChildren(
    ...requests.map((request) => {
      const box = document.createElement("div");
      box.className = "approval";
      box.dataset.id = request.id;
      const title = document.createElement("strong");
      title.textContent = request.title;
      const reason = document.createElement("p");
      reason.textContent = request.reason ?? "";
      const allow = document.createElement("button");
      allow.textContent = request.allowTitle;
      allow.onclick = () => decide(request.id, true);
      const decline = document.createElement("button");
      decline.textContent = request.declineTitle;
      decline.onclick = () => decide(request.id, false);
      box.append(title, reason, allow, decline);
      return box;
    }),
  );
}

async function main(): Promise<void> {
  const client = new Client({ baseUrl: params.get("server") ?? location.origin });
  client.on("state", (state) => {
    $("state").textContent = state;
  });
  client.setUser({ id: params.get("user") ?? "anonymous" }, params.get("token") ?? "");
  const session = await client.agent(params.get("agent") ?? "support").sessions.create({ tools });
  $("session").textContent = session.id;
  const decide = (id: string, allowed: boolean) => void session.decide(id, { allowed }).catch(show);
  const refreshApprovals = () => renderApprovals(session.approvals, decide);
  session.on("conversation", renderConversation);
  session.on("approval", refreshApprovals);
  session.on("approvalResolved", refreshApprovals);
  session.on("error", show);

  const form = $<HTMLFormElement>("ask");
  form.querySelector("button")!.disabled = false;
  form.onsubmit = async (event) => {
    event.preventDefault();
    $("reply").textContent = "";
    const response = session.responses.create($<HTMLInputElement>("text").value);
    try {
      for await (const delta of response) $("reply").textContent += delta;
      $("reply").textContent = (await response).text;
      $("reply").dataset.done = "true";
    } catch (error) {
      show(error);
    }
  };
}

main().catch(show);
