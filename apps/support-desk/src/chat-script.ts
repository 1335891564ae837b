import type { Client } from "@patchbay/client";

/**
 * Chats with the support agent through a session, the way a page would: sends each line, prints
 * the tool calls as they run and the reply.
 *
 * @example
 * ```ts
 * const transcript = await chat(client, "u_ada", ["Where is order A1001?"]);
 * ```
 */
export async function chat(
  client: Client,
  userId: string,
  lines: readonly string[],
  print: (line: string) => void = console.log,
): Promise<string[]> {
  const session = await client.agent("support").sessions.create({ userId });
  session.on("thinking", ({ reason }) => {
    if (reason === "dispatch") print("  (the worker sees the message first)");
  });
  session.on("progress", ({ text }) => print(`  [tool] ${text}`));
  const replies: string[] = [];
  try {
    for (const line of lines) {
      print(`you:   ${line}`);
      const reply = await session.responses.create(line);
      print(`agent: ${reply.text}`);
      replies.push(reply.text);
    }
  } finally {
    session.close();
  }
  return replies;
}
