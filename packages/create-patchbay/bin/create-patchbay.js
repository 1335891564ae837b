#!/usr/bin/env node
// The `create-patchbay` bin (`npm create patchbay`); the CLI itself is the build output.
await import("../dist/cli.js");
