// ESM + CJS with declarations for both; the recipe is shared by every package. Two entries: Node
// (with the zod 3 / zod/mini fallback) and browser (without it; the "browser" export condition).
import { packageConfig } from "../../configs/tsup";

export default packageConfig({ entry: ["src/index.ts", "src/index.browser.ts"] });
