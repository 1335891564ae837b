import { defineConfig } from "vite";

// `vite build` writes the page to dist/. Serving it (with the token endpoint and the /v1 proxy
// to Patchbay) is backend/serve-page.ts's job, so this file stays about the page.
export default defineConfig({
  build: { target: "es2022" }, // top-level await in src/main.ts
});
