// `npm start`: reads .env when there is one, starts the app and stops it cleanly on Ctrl-C.
import { existsSync } from "node:fs";
import { PortTakenError, startApp } from "./app.js";

if (existsSync(".env")) process.loadEnvFile(".env");
const port = (name: string, fallback: number) => Number(process.env[name] || fallback);

const app = await startApp({ patchbayPort: port("PATCHBAY_PORT", 8787), pagePort: port("PORT", 3000) }).catch(
  (error: unknown) => {
    if (!(error instanceof PortTakenError)) throw error;
    console.error(error.message); // a setting to change, not a bug: the sentence without a stack
    process.exit(1);
  },
);
console.log(`
  Page      ${app.pageUrl}   <- open this and ask "weather in Lisbon?"
  Patchbay  ${app.patchbayUrl}
  Model     ${app.model}

Ctrl-C stops it.`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log("\nStopping...");
    app.close().then(
      () => {
        console.log("Stopped.");
        process.exit(0);
      },
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
