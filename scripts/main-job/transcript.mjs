// Prints a session as a readable transcript: what the user says, each tool call with where it
// runs and how it goes, progress lines, approvals, images, and the agent's replies.

const WHERE = { page: "in the page", worker: "on the worker", server: "in the server" };

export function printSession(session, print = console.log) {
  const seen = new Map();
  session.on("toolCall", (call) => {
    const where = call.location ? ` ${WHERE[call.location] ?? call.location}` : "";
    const before = seen.get(call.id);
    if (before === call.status) return;
    seen.set(call.id, call.status);
    // A call first shows as pending, or already running when it started as soon as it was made.
    if (before === undefined) print(`   tool  ${call.name}(${JSON.stringify(call.arguments)})${where}`);
    if (call.status === "pending") return;
    const detail =
      call.result && call.status !== "completed" ? `: ${firstLine(call.result.content.text)}` : "";
    print(`   tool  ${call.name} ${call.status.replace("_", " ")}${detail}`);
    for (const image of call.result?.content.images ?? []) {
      const bytes = image.data ? Math.floor((image.data.length * 3) / 4) : 0;
      print(`   image ${image.mimeType ?? image.url} (${bytes} bytes)`);
    }
  });
  session.on("progress", ({ text }) => print(`   ...   ${text}`));
  session.on("held", ({ callId }) =>
    print(`   held  ${callId.slice(0, 12)}: interrupts no longer cancel it`),
  );
  session.on("approval", (request) =>
    print(`   ask   "${request.title}"${request.reason ? ` (reason: ${request.reason})` : ""}`),
  );
  session.on("approvalResolved", ({ outcome }) => print(`   ask   answered: ${outcome}`));
}

function firstLine(text) {
  return text.split("\n").filter(Boolean).join(" ").slice(0, 120);
}
