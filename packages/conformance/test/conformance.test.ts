// The kit against every worker SDK in the repository: @patchbay/dispatch (TypeScript) and the
// Python SDK (Debian's python3 with python3-websockets). Each scenario is its own test, against a
// fresh server and fresh worker processes.
import { describe, expect, it } from "vitest";
import { runKit, SCENARIOS } from "../src/run-kit";
import { SDK_WORKERS } from "../src/sdks";

for (const sdk of SDK_WORKERS) {
  describe(`conformance: ${sdk.name}`, () => {
    for (const scenario of SCENARIOS) {
      it(scenario.name, { timeout: 60_000 }, async () => {
        const [result] = await runKit({ command: sdk.command, scenarios: [scenario.name] });
        expect(result?.error).toBeUndefined();
        expect(result?.ok).toBe(true);
      });
    }
  });
}
