import { existsSync } from "node:fs";
import { createUserToken } from "@patchbay/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestPostgres, type TestPostgres } from "../../server/src/testing/postgres-server";
import { cliWorkspaces, runCli } from "./helpers/cli-process";
import { RawClient } from "./helpers/raw-client";

// `patchbay serve --database-url` against a real PostgreSQL (Debian's postgresql, started in a
// temporary directory by the test): the crash-and-restart guarantees of the SQLite store hold.
let pg: TestPostgres;
beforeAll(async () => {
  pg = await startTestPostgres();
}, 60_000);
afterAll(async () => {
  await pg?.stop();
});

const { workspace: newWorkspace, start } = cliWorkspaces("patchbay-pg-cli-");

const AGENT = `name: Support
instructions: You help with orders.
model:
  provider: scripted
  rules:
    - match: "where am i"
      toolCalls:
        - tool: locate
      reply: "You are in {result}."
    - match: hello
      reply: Hello from Postgres.
`;

const workspace = () => newWorkspace(AGENT);

describe("patchbay serve --database-url", () => {
  it("keeps sessions in Postgres through a SIGKILL, refuses a second server meanwhile, and runs a retried send once", async () => {
    const { env, secret } = workspace();
    const first = await start(["serve", "--database-url", pg.url], env);
    const token = await createUserToken(secret, "u_1");
    const locate = { name: "locate", description: "Where", parameters: { type: "object", properties: {} } };
    const page = await RawClient.open(first.wsUrl, { kind: "user", token });
    const sessionId = await page.create("support", { tools: [locate] });
    page.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    await page.turnEnd("c_1");
    page.send({ type: "message.send", sessionId, commandId: "c_2", text: "where am i" });
    await page.nextOf("tool.call");
    const seenBefore = page.events(sessionId);
    // A second server on the same database is refused (its recovery would end this turn).
    const rival = await runCli(["serve", "--database-url", pg.url], env);
    expect(rival.code).toBe(2);
    expect(rival.stderr).toMatch(
      new RegExp(`in use by another Patchbay server \\(pid ${first.child.pid} on `),
    );
    // The lock dies with the process: the next server starts at once after a SIGKILL.
    first.child.kill("SIGKILL");
    await first.exited;
    await page.whenClosed();

    const second = await start(["serve", "--database-url", pg.url], env);
    const again = await RawClient.open(second.wsUrl, { kind: "user", token });
    again.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0, tools: [locate] });
    const failed = await again.turnEnd("c_2");
    expect(failed).toMatchObject({ type: "response.failed", error: { code: "server_restart" } });
    // Every event the first server sent is replayed with the same seq and body, none doubled.
    const replayed = again.events(sessionId);
    expect(replayed.slice(0, seenBefore.length)).toEqual(seenBefore);
    const seqs = replayed.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    // A client that retries its first send (same command id) does not start a second turn.
    again.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    again.send({ type: "message.send", sessionId, commandId: "c_3", text: "hello" });
    const end = await again.turnEnd("c_3");
    expect(end.type === "response.completed" && end.text).toBe("Hello from Postgres.");
    const res = await fetch(`${second.url}/v1/sessions/${sessionId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await res.json()) as { conversation: { type: string; status: string }[] };
    expect(body.conversation.map((item) => `${item.type}:${item.status}`)).toEqual([
      "message:completed",
      "message:completed",
      "message:completed",
      "tool_call:failed",
      "message:completed",
      "message:completed",
    ]);
    // Nothing went to the SQLite data directory.
    expect(existsSync(env.PATCHBAY_DATA_DIR)).toBe(false);
    await again.close();
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });

  it("refuses a URL that is not Postgres, and an unreachable database without its password", async () => {
    const { env } = workspace();
    const wrong = await runCli(["serve", "--database-url", "mysql://x@127.0.0.1/db"], env);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/postgres:\/\//);
    const down = await runCli(
      ["serve", "--database-url", "postgres://app:pw-never-shown@127.0.0.1:1/db"],
      env,
    );
    expect(down.code).not.toBe(0);
    expect(down.stderr).toMatch(/127\.0\.0\.1:1/);
    expect(down.stderr).not.toContain("pw-never-shown");
  });
});
