// @vitest-environment node
// A Next.js-style server render: no window, no document, no WebSocket opened. The hooks render
// their "connecting" state and the components their markup; nothing throws.
import { Client } from "@patchbay/client";
import { renderToString } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type * as ReactBindings from "./index";

let react: typeof ReactBindings;
function Chat() {
  const chat = react.useSession("assistant");
  const { approvals } = react.useApprovals(chat.store);
  return (
    <main>
      <p>{chat.status}</p>
      <react.Conversation
        items={[
          { type: "message", id: "m_1", role: "user", text: "hi", status: "completed", createdAt: 1 },
          {
            type: "tool_call",
            id: "call_1",
            name: "get_location",
            arguments: {},
            displayTitle: "Checking where you are",
            status: "running",
            progress: "Asking the browser",
            held: false,
            attempt: 1,
            createdAt: 2,
          },
        ]}
        pending={[{ commandId: "c_1", text: "still on its way" }]}
      />
      {approvals.length}
    </main>
  );
}

describe("server rendering", () => {
  it("imports and renders with react-dom/server where there is no window", async () => {
    expect(typeof (globalThis as { window?: unknown }).window).toBe("undefined");
    // Imported here, after the check above: importing must not need a window either.
    react = await import("./index");
    const opened: string[] = [];
    const client = new Client({
      baseUrl: "http://127.0.0.1:9",
      createSocket: (url) => {
        opened.push(url);
        throw new Error("a server render must not open a socket");
      },
    });
    const html = renderToString(
      <react.PatchbayProvider client={client}>
        <Chat />
      </react.PatchbayProvider>,
    );
    expect(html).toContain("<p>connecting</p>");
    expect(html).toContain("Checking where you are");
    expect(html).toContain("Asking the browser");
    expect(html).toContain("still on its way");
    expect(opened).toEqual([]);
    client.close();
  });
});
