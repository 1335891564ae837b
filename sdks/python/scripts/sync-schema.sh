#!/usr/bin/env bash
# Copies the protocol's channel schemas (packages/protocol/schema) into the package, which bundles
# them to decode frames. Run after `pnpm --filter @patchbay/protocol generate`; a test fails when
# the copy is stale.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
for channel in client-to-server server-to-client worker-to-server server-to-worker; do
  cp "$here/../../packages/protocol/schema/$channel.schema.json" "$here/patchbay/schema/"
done
