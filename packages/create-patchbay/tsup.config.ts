// ESM only: this package is a CLI (`npm create patchbay`) with a small programmatic entry, and it
// finds its template next to itself through import.meta.url.
import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/cli.ts"],
  format: ["esm"],
  platform: "node",
  target: "es2022",
  dts: { entry: "src/index.ts" },
  sourcemap: true,
  clean: true,
});
