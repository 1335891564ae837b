import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const source = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

// The page is built from the client package's browser entry. Like the tests, it reads the
// @patchbay packages from their sources, so a run never bundles a stale build.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  logLevel: "warn",
  resolve: {
    alias: {
      "@patchbay/client": source("client/src/index.browser.ts"),
      // The browser entries, as a page's bundler picks them with the "browser" condition.
      "@patchbay/tools": source("tools/src/index.browser.ts"),
      // The subpath before the package: an alias also matches what starts with it.
      "@patchbay/protocol/lite": source("protocol/src/lite.ts"),
      "@patchbay/protocol/runtime": source("protocol/src/runtime.ts"),
      "@patchbay/protocol": source("protocol/src/index.ts"),
    },
  },
  build: {
    emptyOutDir: true,
    target: "es2022",
    sourcemap: true,
    // Two pages: the approval page and the reload page.
    rollupOptions: {
      input: {
        index: fileURLToPath(new URL("./index.html", import.meta.url)),
        reload: fileURLToPath(new URL("./reload.html", import.meta.url)),
      },
    },
  },
});
