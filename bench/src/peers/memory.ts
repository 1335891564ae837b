// How much memory this process holds, measured the same way in the server and the raw baseline.

/** RSS and heap after collecting garbage twice (a second pass catches what finalizers freed). */
export async function measureMemory(): Promise<{ rss: number; heapUsed: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("start the process with --expose-gc to measure memory");
  for (let i = 0; i < 2; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}
