// ESM + CJS with declarations for both; the recipe is shared by every package. Two entries: the
// Node one (WebSocket from `ws`) and the browser one (the native WebSocket, no Node import).
// jose ships ESM only, so the CJS builds inline it.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({ entry: ["src/index.ts", "src/index.browser.ts"], bundleEsmOnly: ["jose"] });
