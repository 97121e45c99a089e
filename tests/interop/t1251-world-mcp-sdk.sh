#!/usr/bin/env bash
# The official MCP TypeScript SDK client against faultline world (tests/interop/world-sdk.mjs;
# pinned by package-lock.json, installed by scripts/bootstrap): listing, calls, the lost
# response as the SDK surfaces it, the report closing the world, the ledger.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${FAULTLINE:=$here/../../faultline}"
export FAULTLINE
if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
    echo "FAIL - node_modules missing: run scripts/bootstrap"
    echo "0 passed, 1 failed"
    exit 1
fi
cd "$here" && timeout 120 node world-sdk.mjs
