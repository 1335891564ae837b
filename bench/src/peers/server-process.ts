// The Patchbay server in a process of its own (the bench server: scripted `support` agent,
// dispatch installed, SQLite in a temp dir). Answers `memory` (after a full GC when started with
// --expose-gc) and `sessions` (how many are loaded) for the scale scenario.
import { startBenchServer } from "../patchbay-server";
import { measureMemory } from "./memory";
import { failed, onRequest, ready } from "./peer-runtime";

try {
  const bench = await startBenchServer();
  onRequest(async (message) => {
    if (message.type === "memory") return measureMemory();
    if (message.type === "sessions") return { loaded: bench.server.sessions.loaded().length };
    throw new Error(`unknown request ${String(message.type)}`);
  });
  process.on("disconnect", () => void bench.close());
  ready({ url: bench.server.url });
} catch (error) {
  failed(error);
}
