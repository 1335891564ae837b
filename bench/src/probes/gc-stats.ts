// A process's garbage collection over a stretch of work, from `v8.GCProfiler`: how many scavenges
// and full collections ran, what they cost, and how many bytes scavenges promoted to the old
// generation (what survives a call is what garbage collection costs; the count of bytes moves
// with the load far less than any time does).
import { GCProfiler } from "node:v8";

export interface GcSummary {
  scavenges: number;
  scavengeUs: number;
  fullGcs: number;
  fullGcUs: number;
  /** Bytes moved to the old generation by scavenges. */
  promotedBytes: number;
  /** Bytes allocated in the young generation between scavenges (what each one found there). */
  youngBytes: number;
  /** Bytes that survived a scavenge and stayed young (copied within the young generation). */
  survivedBytes: number;
  /** The young generation's size at the last scavenge. */
  newSpaceBytes: number;
}

interface SpaceStats {
  spaceName: string;
  spaceUsedSize: number;
}

let profiler: GCProfiler | undefined;

/** Starts counting (again, from zero). */
export function startGcStats(): void {
  profiler?.stop();
  profiler = new GCProfiler();
  profiler.start();
}

/** Stops counting and sums what ran since `startGcStats`. */
export function stopGcStats(): GcSummary {
  const summary: GcSummary = {
    scavenges: 0,
    scavengeUs: 0,
    fullGcs: 0,
    fullGcUs: 0,
    promotedBytes: 0,
    youngBytes: 0,
    survivedBytes: 0,
    newSpaceBytes: 0,
  };
  const result = profiler?.stop();
  profiler = undefined;
  const used = (spaces: SpaceStats[], name: string) =>
    spaces.find((s) => s.spaceName === name)?.spaceUsedSize ?? 0;
  const oldUsed = (spaces: SpaceStats[]) => used(spaces, "old_space");
  let youngLeft = -1;
  for (const gc of result?.statistics ?? []) {
    if (gc.gcType === "Scavenge" || gc.gcType === "MinorMarkSweep") {
      summary.scavenges++;
      summary.scavengeUs += gc.cost;
      const before = gc.beforeGC.heapSpaceStatistics as SpaceStats[];
      const after = gc.afterGC.heapSpaceStatistics as SpaceStats[];
      if (youngLeft >= 0) summary.youngBytes += used(before, "new_space") - youngLeft;
      youngLeft = used(after, "new_space");
      summary.survivedBytes += youngLeft;
      summary.newSpaceBytes =
        (before as Array<SpaceStats & { spaceSize: number }>).find((s) => s.spaceName === "new_space")
          ?.spaceSize ?? 0;
      summary.promotedBytes += Math.max(
        0,
        oldUsed(gc.afterGC.heapSpaceStatistics as SpaceStats[]) -
          oldUsed(gc.beforeGC.heapSpaceStatistics as SpaceStats[]),
      );
    } else {
      summary.fullGcs++;
      summary.fullGcUs += gc.cost;
    }
  }
  return summary;
}
