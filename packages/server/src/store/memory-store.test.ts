import { describe, expect, it } from "vitest";
import { describeLeaseContract, describeStoreContract, message, session } from "../testing/store-contract";
import { MemoryStore } from "./memory-store";

describeStoreContract("MemoryStore", async () => new MemoryStore());
describeLeaseContract("MemoryStore", async () => new MemoryStore());

describe("MemoryStore", () => {
  it("stores copies: a caller that mutates what it committed or read changes nothing stored", async () => {
    const store = new MemoryStore();
    const record = session("s_1");
    await store.createSession(record);
    record.metadata.plan = "free";
    const item = message("m_1", "hi");
    await store.commit("s_1", { items: [item] });
    item.text = "changed";
    const [read] = await store.conversation("s_1");
    if (read?.type === "message") read.text = "changed too";
    expect(await store.conversation("s_1")).toEqual([message("m_1", "hi")]);
    expect((await store.getSession("s_1"))?.metadata).toEqual({ plan: "pro" });
  });

  it("refuses writes after close", async () => {
    const store = new MemoryStore();
    await store.close();
    await expect(store.createSession(session("s_1"))).rejects.toThrow(/closed/);
  });
});
