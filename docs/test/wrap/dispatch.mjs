// What a sample imports as @patchbay/dispatch when the samples test runs it: the built package, with
// every Dispatch remembered (whether it reached `ready`, the work it finished) so the runner can stop it.
import * as real from "@patchbay/dispatch";

export * from "@patchbay/dispatch";

export class Dispatch extends real.Dispatch {
  constructor(options) {
    super(options);
    const entry = { dispatch: this, running: false, ready: false, finished: [] };
    this.on("ready", () => {
      entry.ready = true;
    });
    this.on("work.finished", (event) => entry.finished.push(event));
    globalThis.__sampleTracked?.dispatches.push(entry);
  }

  run() {
    const entry = globalThis.__sampleTracked?.dispatches.find((e) => e.dispatch === this);
    if (entry) entry.running = true;
    return super.run();
  }
}
