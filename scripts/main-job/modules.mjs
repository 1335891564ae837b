// Loads what the main job runs: the built packages (npm start builds them first) and the sample
// apps, which are TypeScript and load through tsx. The apps resolve `@patchbay/*` to the same
// built files, so a `Tools` made here is the class the apps and the client check against.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

export const root = join(import.meta.dirname, "..", "..");
const fromApps = createRequire(join(root, "apps", "flight-booking", "package.json"));
// tsx's ESM entry (its exports map sends require() to a CommonJS build that cannot register hooks).
const tsxDir = dirname(fromApps.resolve("tsx/package.json"));
const tsxApi = JSON.parse(readFileSync(join(tsxDir, "package.json"), "utf8")).exports["./esm/api"].import
  .default;
const { register } = await import(pathToFileURL(join(tsxDir, tsxApi)).href);
register();

const load = (path) => import(pathToFileURL(join(root, path)).href);

export const server = await load("packages/server/dist/index.js");
export const client = await load("packages/client/dist/index.js");
export const models = await load("packages/models/dist/index.js");
export const flightBooking = await load("apps/flight-booking/src/index.ts");
export const browserAssistant = await load("apps/browser-assistant/backend/index.ts");
