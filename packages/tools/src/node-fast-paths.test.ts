// Every executor suite again, with executors taking calls as the Node entry makes them (its fast
// paths and its zod compiler, as a server runs calls); the suites' own files run them on the
// plain code, as a page does. Importing a suite registers its tests here.
import { useNodeEntryPaths } from "./test-support/executor";

useNodeEntryPaths();
await import("./call-context.test");
await import("./call-hold.test");
await import("./call-pipeline.test");
await import("./call-runner.test");
await import("./call-slots.test");
await import("./call-step-approve.test");
await import("./call-step-run.test");
await import("./call-step-when.test");
await import("./call-timers.test");
await import("./preapproved-tool-executor.test");
await import("./tool-executor.test");
