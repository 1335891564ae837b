// patchbay-conformance [--only <part>]... -- <worker command...>
// Runs the kit against the worker the command starts; prints `N passed, N failed` and exits 1 on
// any failure.
import { runKit, SCENARIOS, summary } from "./run-kit";

const args = process.argv.slice(2);
// `pnpm <script> -- --only x -- cmd` hands the script its own `--` first: the kit's flags follow it.
if (args[0] === "--" && (args[1] === "--only" || args[1] === "--list")) args.shift();
const dash = args.indexOf("--");
// Without a `--`, only `--list` can stand alone; anything else is the worker's command.
const listOnly = dash < 0 && args[0] === "--list";
const flags = dash >= 0 ? args.slice(0, dash) : listOnly ? args : [];
const command = dash >= 0 ? args.slice(dash + 1) : listOnly ? [] : args;
const only: string[] = [];
for (let i = 0; i < flags.length; i++) {
  if (flags[i] === "--only" && flags[i + 1]) only.push(flags[++i]!);
  else if (flags[i] === "--list") {
    for (const s of SCENARIOS) console.log(s.name);
    process.exit(0);
  } else {
    console.error(`unknown option ${flags[i]}`);
    process.exit(2);
  }
}
if (command.length === 0) {
  console.error("usage: patchbay-conformance [--only <part>]... [--list] -- <worker command...>");
  process.exit(2);
}
console.log(`conformance: ${command.join(" ")}`);
const results = await runKit({ command, only, log: (line) => console.log(line) });
console.log(summary(results));
process.exit(results.every((r) => r.ok) ? 0 : 1);
