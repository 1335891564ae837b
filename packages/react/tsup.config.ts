// ESM + CJS with declarations for both; the recipe is shared by every package. React and the
// client stay external (a peer and a dependency).
import { packageConfig } from "../../configs/tsup";

export default packageConfig({});
