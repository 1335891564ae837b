// Reads `.heapprofile` files (the sampling heap profiler's, from `heap-sampling.ts` or
// `node --heap-prof`) and prints the functions that allocated the most bytes themselves, and for
// each the caller it allocated under most, to see where a process's garbage comes from. Usage:
//   BENCH_HEAP_ALL=1 node --import tsx src/probes/turn-cost.ts --server-heap /tmp/server.heapprofile
//   node --import tsx src/heap-top.ts /tmp/server.heapprofile [--top 30]
import { readFileSync } from "node:fs";
import { type CallFrame, frameName } from "./frame-name";

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const args = process.argv.slice(2);
const topIndex = args.indexOf("--top");
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 30;
const files = args.filter((a, i) => a.endsWith(".heapprofile") && i !== topIndex + 1);

const where = (node: HeapNode) => frameName(node.callFrame);

for (const file of files) {
  const { head } = JSON.parse(readFileSync(file, "utf8")) as { head: HeapNode };
  const bytes = new Map<string, number>();
  const callers = new Map<string, Map<string, number>>();
  let total = 0;
  const walk = (node: HeapNode, parent: HeapNode | undefined) => {
    if (node.selfSize > 0) {
      const key = where(node);
      total += node.selfSize;
      bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
      const by = callers.get(key) ?? new Map<string, number>();
      const caller = parent ? where(parent) : "(root)";
      by.set(caller, (by.get(caller) ?? 0) + node.selfSize);
      callers.set(key, by);
    }
    for (const child of node.children) walk(child, node);
  };
  walk(head, undefined);
  console.log(`\n${file}: ${(total / 1024 / 1024).toFixed(1)} MiB sampled`);
  for (const [key, size] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const [caller] = [...callers.get(key)!].sort((a, b) => b[1] - a[1]);
    console.log(`${((size / total) * 100).toFixed(1).padStart(5)}%  ${key}   <- ${caller![0]}`);
  }
}
