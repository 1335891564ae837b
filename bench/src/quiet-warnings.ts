// The bench prints its table and its progress lines, nothing else. Under 64 calls in flight the
// MCP SDK (client here, server in the peer) adds a listener per request to shared emitters and
// signals, and Node then prints a MaxListenersExceededWarning per emitter: about 2,950 lines in a
// full run, burying the table. They are about the peer's code, not a leak of ours, so this one
// warning is dropped in every bench process (import this module first); every other warning
// is printed as before.
const emitWarning = process.emitWarning.bind(process);

process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const name = typeof warning === "string" ? rest[0] : warning.name;
  const type = typeof name === "object" && name !== null ? (name as { type?: string }).type : name;
  if (type === "MaxListenersExceededWarning") return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;
