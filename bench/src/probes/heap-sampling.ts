// The sampling heap profiler of this process, through the inspector: which allocation sites made
// the objects that survived young-generation collections (promoted, then collected by a full
// collection, or still alive), for the hosted-call probe. Writes a `.heapprofile` (DevTools).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

let session: Session | undefined;

const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    session?.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))),
  );

/**
 * Starts sampling; objects collected by a scavenge are left out, those a full GC took are kept.
 * `BENCH_HEAP_ALL=1` keeps those a scavenge took too: every allocation, not only what outlived it.
 */
export async function startHeapSampling(): Promise<void> {
  session ??= new Session();
  session.connect();
  await post("HeapProfiler.enable");
  await post("HeapProfiler.startSampling", {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.BENCH_HEAP_ALL === "1",
  });
}

/** Stops sampling and writes the profile to `file`. */
export async function stopHeapSampling(file: string): Promise<void> {
  const { profile } = (await post("HeapProfiler.stopSampling")) as { profile: unknown };
  writeFileSync(file, JSON.stringify(profile));
  session?.disconnect();
  session = undefined;
}
