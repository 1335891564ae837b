// ESM + CJS with declarations for both; the recipe is shared by every package. Three entries:
// the whole protocol (zod schemas included); `lite`, what a browser page needs without zod; and
// `runtime`, the reconnecting socket, backoff and RecentMap every peer runs.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({ entry: ["src/index.ts", "src/lite.ts", "src/runtime.ts"] });
