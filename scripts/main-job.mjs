// The main job behind `npm start` (and `npm run demo` with --demo). It starts the sample stack on
// 127.0.0.1 and prints where it is:
//   - the Patchbay server: SQLite under .patchbay-data/, the agents of apps/flight-booking and
//     apps/browser-assistant, the scripted model unless OPENAI_API_KEY or ANTHROPIC_API_KEY is set;
//   - the flight-booking dispatch worker, hosting search_flights, book_flight and seat_map;
//   - the browser-assistant page, with its token endpoint.
// It runs until Ctrl-C and then shuts down gracefully. With --demo it runs a scripted
// conversation through the real client instead, prints the transcript and exits 0 when every
// step happened as expected (1 otherwise).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runDemo } from "./main-job/demo.mjs";
import { root } from "./main-job/modules.mjs";
import { realModelName, startStack } from "./main-job/stack.mjs";

const demo = process.argv.includes("--demo");
const DEMO_DEADLINE_MS = 60_000;

if (demo) {
  // A fresh data directory and free ports, and always the scripted model: the demo's steps are
  // checked, so its answers must be the same on every machine.
  const dataDir = mkdtempSync(join(tmpdir(), "patchbay-demo-"));
  const deadline = setTimeout(() => {
    console.error(`\nThe demo did not finish within ${DEMO_DEADLINE_MS / 1000} s.`);
    process.exit(1);
  }, DEMO_DEADLINE_MS);
  let failures = ["the stack did not start"];
  let stack;
  try {
    stack = await startStack({
      dataDir,
      ports: { patchbay: 0, page: 0 },
      env: withoutModelKeys(),
      quiet: true,
    });
    console.log(`Patchbay demo: server ${stack.patchbay.url}, flight worker connected, scripted model.`);
    failures = await runDemo(stack);
  } finally {
    await stack?.close();
    rmSync(dataDir, { recursive: true, force: true });
    clearTimeout(deadline);
  }
  console.log(
    failures.length === 0
      ? "\nDemo complete: every step happened as expected."
      : `\nDemo FAILED (${failures.length}):\n${failures.map((f) => `  - ${f}`).join("\n")}`,
  );
  process.exit(failures.length === 0 ? 0 : 1);
}

const port = (name, fallback) => Number(process.env[name] ?? fallback);
// The server locks its data directory: a second `npm start` in this checkout stops here, before
// the port fallback could start anything of its own on the first one's data.
const stack = await startStack({
  dataDir: join(root, ".patchbay-data"),
  ports: { patchbay: port("PATCHBAY_PORT", 8787), page: port("PORT", 5173) },
}).catch((error) => {
  if (error?.code !== "data_dir_locked") throw error;
  console.error(`\nPatchbay is already running from this checkout: ${error.message}`);
  process.exit(1);
});
console.log(`
Patchbay is running on 127.0.0.1.

  Browser assistant  ${stack.page.url}        <- open this
  Patchbay server    ${stack.patchbay.url}   (health: ${stack.patchbay.url}/healthz)
  Flight worker      connected, hosting search_flights, book_flight, seat_map
  Model              ${realModelName() ?? "scripted (OPENAI_API_KEY or ANTHROPIC_API_KEY in the environment of npm start: a real one)"}
  Data               ${join(root, ".patchbay-data")}

Try "where am I?", "find cafés near me" (then Stop), "seat map for LH400", "flights to New York". Ctrl-C stops everything.
`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (stopping) process.exit(1); // a second Ctrl-C does not wait
    stopping = true;
    console.log("\nStopping: letting running tool calls finish...");
    stack.close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}

function withoutModelKeys() {
  const { OPENAI_API_KEY: _o, ANTHROPIC_API_KEY: _a, ...env } = process.env;
  return env;
}
