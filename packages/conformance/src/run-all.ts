// `npm run conformance`: the kit against every worker SDK in the repository.
import { runKit, type ScenarioResult, summary } from "./run-kit";
import { SDK_WORKERS } from "./sdks";

const all: ScenarioResult[] = [];
for (const sdk of SDK_WORKERS) {
  console.log(`conformance: ${sdk.name}`);
  const results = await runKit({ command: sdk.command, log: (line) => console.log(line) });
  console.log(`  ${summary(results)}`);
  all.push(...results.map((r) => ({ ...r, name: `${sdk.name}: ${r.name}` })));
}
console.log(summary(all));
process.exit(all.every((r) => r.ok) ? 0 : 1);
