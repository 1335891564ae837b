// Sits between Patchbay and a real stdio MCP server: `node mcp-tap.mjs <log> <command> [args...]`.
// Passes every byte through unchanged, appends each line the client sends to <log>, and writes
// `pid <n>` (the server's pid) there, so a test can see notifications/cancelled arrive and can
// kill the server itself. When the server exits, the tap exits with its code.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

const [log, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
appendFileSync(log, `pid ${child.pid}\n`);
let pending = "";
process.stdin.on("data", (chunk) => {
  child.stdin.write(chunk);
  pending += chunk.toString("utf8");
  const lines = pending.split("\n");
  pending = lines.pop() ?? "";
  for (const line of lines) if (line.trim()) appendFileSync(log, `> ${line}\n`);
});
process.stdin.on("end", () => child.stdin.end());
child.stdout.pipe(process.stdout);
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
process.on("SIGTERM", () => child.kill("SIGTERM"));
