import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionEvent } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import { message, session } from "../testing/store-contract";
import { ChangeJson, committedEventJson } from "./change-json";
import { SqliteStore } from "./sqlite-store";

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("ChangeJson", () => {
  it("writes an event around its item's text, which parses back to the event", () => {
    const json = new ChangeJson();
    const item = message("m_1", 'a "quoted" text');
    const event = {
      type: "message.created",
      commandId: "c_1",
      item,
      sessionId: "s_1",
      seq: 3,
    } as SessionEvent;
    const text = json.event(event);
    expect(JSON.parse(text)).toEqual(event);
    expect(text.endsWith(`"item":${json.item(item)}}`)).toBe(true);
    expect(committedEventJson(event)).toBe(text);
    const plain = { type: "tool.held", callId: "c", sessionId: "s_1", seq: 4 } as SessionEvent;
    expect(JSON.parse(json.event(plain))).toEqual(plain);
    expect(committedEventJson({ ...plain })).toBeUndefined(); // only the committed object
  });

  it("lets the SQLite store serialize a megabyte message once, for both tables and the sockets", async () => {
    const dir = mkdtempSync(join(tmpdir(), "patchbay-change-json-"));
    dirs.push(dir);
    const store = new SqliteStore({ dataDir: dir });
    try {
      await store.createSession(session("s_1"));
      const item = message("m_1", "x".repeat(1_000_000));
      const stringify = vi.spyOn(JSON, "stringify");
      const { events } = await store.commit("s_1", {
        items: [item],
        events: [{ type: "message.created", commandId: "c_1", item }],
      });
      // Every serialization that carried the megabyte text: the item's, and no other.
      const big = stringify.mock.results.filter(
        (r) => typeof r.value === "string" && (r.value as string).length > 1_000_000,
      );
      expect(big).toHaveLength(1);
      stringify.mockRestore();
      const sent = committedEventJson(events[0]!);
      expect(sent).toBeDefined();
      expect(JSON.parse(sent!)).toEqual(events[0]);
      expect(await store.readEvents("s_1", 0)).toEqual(events);
      expect(await store.conversation("s_1")).toEqual([item]);
    } finally {
      await store.close();
    }
  });
});
