#!/usr/bin/env bash
# The official MCP TypeScript SDK client against @modelcontextprotocol/server-filesystem through
# faultline mcp: results as the SDK sees them, and each fault as it surfaces in the SDK
# (tests/interop/mcp-interop.mjs; pinned by package-lock.json, installed by scripts/bootstrap).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${FAULTLINE:=$here/../../faultline}"
export FAULTLINE
if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
    echo "FAIL - node_modules missing: run scripts/bootstrap"
    echo "0 passed, 1 failed"
    exit 1
fi
cd "$here" && timeout 600 node mcp-interop.mjs filesystem
