// V8's sampling CPU profiler of this process, through the inspector, over a stretch of work only
// (no start-up or warm-up in it), for the hosted-call probe. Writes a `.cpuprofile` (DevTools;
// `profile-top.ts` reads it).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

let session: Session | undefined;

const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    session?.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))),
  );

/** Starts sampling every `intervalUs` microseconds. */
export async function startCpuSampling(intervalUs = 100): Promise<void> {
  session ??= new Session();
  session.connect();
  await post("Profiler.enable");
  await post("Profiler.setSamplingInterval", { interval: intervalUs });
  await post("Profiler.start");
}

/** Stops sampling and writes the profile to `file`. */
export async function stopCpuSampling(file: string): Promise<void> {
  const { profile } = (await post("Profiler.stop")) as { profile: unknown };
  writeFileSync(file, JSON.stringify(profile));
  session?.disconnect();
  session = undefined;
}
