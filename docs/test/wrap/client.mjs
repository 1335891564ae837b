// What a sample imports as @patchbay/client when the samples test runs it: the built package, with
// every Client it makes remembered so the runner can close it after the sample.
import * as real from "@patchbay/client";

export * from "@patchbay/client";

export class Client extends real.Client {
  constructor(options) {
    super(options);
    globalThis.__sampleTracked?.clients.push(this);
  }
}
