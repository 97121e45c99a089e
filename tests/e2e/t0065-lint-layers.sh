#!/usr/bin/env bash
# tests/lint-layers: the tree keeps to the layers of docs/architecture.md, and the checker fails,
# naming FILE:LINE, the include and the rule, on an include planted in a copy of it: a codec that
# reaches up into a boundary, one boundary including another's header, a header without a
# directory, a directory the table does not know. The allowlist is honoured, and an entry that
# no longer matches is only a note.
. "$(dirname "$0")/lib.sh"

# fake tree: the script and a few sources that keep to the rule
fake() {
    rm -rf fake; mkdir -p fake/tests fake/src/util fake/src/codec fake/src/agent fake/src/mcp \
        fake/src/plan fake/src/experiment fake/src/cli
    cp "$FAULTLINE_ROOT/tests/lint-layers" fake/tests/
    printf '#include <stdio.h>\n#include "util/buf.h"\n' >fake/src/util/buf.h
    printf '#include "util/buf.h"\n#include "codec/wire.h"\n' >fake/src/codec/wire.c
    printf '#include "codec/wire.h"\n#include "agent/llm.h"\n' >fake/src/agent/llm.c
    printf '#include "codec/jsonrpc.h"\n' >fake/src/mcp/relay.c
    printf '#include "experiment/experiment.h"\n' >fake/src/plan/plan.h
    printf '#include "plan/plan.h"\n' >fake/src/experiment/catalog.c
    printf '#include "agent/agent.h"\n#include "mcp/relay.h"\n' >fake/src/cli/cmd_agent.c
}
export -f fake # test bodies run in a new bash

test_expect "the tree keeps to the layers" '
    "$FAULTLINE_ROOT/tests/lint-layers" >tree.out
    grep -q "^1 passed, 0 failed" tree.out
'
test_expect "docs/architecture.md names every directory of the table in its layer" '
    sed -n "/^## Layers/,/^## /p" "$FAULTLINE_ROOT/docs/architecture.md" >layers.md
    sed -n "/^layers=/,/^.$/p" "$FAULTLINE_ROOT/tests/lint-layers" | grep -E "^[a-z]+ +[0-9]" >table
    test "$(wc -l <table)" -ge 10
    while read -r dir rank name kind; do
        grep -qE "^\| $rank $name( \(side by side\))? \|.*src/$dir[,) |]" layers.md || { echo "src/$dir: not in layer $rank $name"; exit 1; }
    done <table
'
test_expect "a tree that keeps to the rule passes: own directory, lower layers, open layers" '
    fake
    fake/tests/lint-layers >ok.out
    grep -q "^1 passed, 0 failed" ok.out
'
test_expect "a codec including a boundary header fails with FILE:LINE and the rule" '
    fake
    printf "/* x */\n#include \"util/buf.h\"\n#  include \"mcp/relay.h\" /* up */\n" >fake/src/codec/sse.c
    rc=0; fake/tests/lint-layers >up.out || rc=$?
    test "$rc" = 1
    grep -q "^src/codec/sse.c:3: #include \"mcp/relay.h\": codec (layer 2, codecs) may not include mcp (layer 4, boundaries)" up.out
    grep -q "^0 passed, 1 failed" up.out
    refute grep -q "src/codec/sse.c:2:" up.out
    mkdir fake/src/codec/sub
    printf "#include \"codec/sub/x.h\"\n#include \"agent/llm.h\"\n" >fake/src/codec/sub/x.c
    rc=0; fake/tests/lint-layers >sub.out || rc=$?
    test "$rc" = 1
    grep -q "^src/codec/sub/x.c:2: #include \"agent/llm.h\": codec (layer 2, codecs) may not include agent" sub.out
    refute grep -q "src/codec/sub/x.c:1:" sub.out
'
test_expect "a contract including a codec fails" '
    fake
    printf "#include \"codec/wire.h\"\n" >fake/src/plan/plan.c
    rc=0; fake/tests/lint-layers >contract.out || rc=$?
    test "$rc" = 1
    grep -q "^src/plan/plan.c:1: #include \"codec/wire.h\": plan (layer 1, contracts) may not include codec" contract.out
'
test_expect "a boundary including a sibling boundary header fails" '
    fake
    printf "#include \"codec/wire.h\"\n#include \"mcp/relay.h\"\n" >fake/src/agent/mcpclient.c
    rc=0; fake/tests/lint-layers >side.out || rc=$?
    test "$rc" = 1
    grep -q "^src/agent/mcpclient.c:2: #include \"mcp/relay.h\": agent and mcp are both boundaries, side by side" side.out
    refute grep -q "mcpclient.c:1:" side.out
'
test_expect "an include without a directory and a directory without a layer fail" '
    fake
    printf "#include \"wire.h\"\n#include \"nowhere/x.h\"\n" >fake/src/codec/sse.c
    mkdir fake/src/newthing
    printf "#include \"util/buf.h\"\n" >fake/src/newthing/a.c
    rc=0; fake/tests/lint-layers >unknown.out || rc=$?
    test "$rc" = 1
    grep -q "^src/codec/sse.c:1: #include \"wire.h\": name the directory" unknown.out
    grep -q "^src/codec/sse.c:2: #include \"nowhere/x.h\": src/nowhere has no layer" unknown.out
    grep -q "^src/newthing/a.c:1: src/newthing has no layer" unknown.out
'
test_expect "the allowlisted include passes; a stale allowlist entry is a note, not a failure" '
    fake
    # the real allowlist is empty: give the copy one entry
    sed -i "s|^allow=.\$|&\nsrc/mcp/backend.c control/client.h -- an entry for this test|" fake/tests/lint-layers
    grep -q "^src/mcp/backend.c control/client.h -- an entry" fake/tests/lint-layers
    mkdir -p fake/src/control
    printf "#include \"control/client.h\"\n" >fake/src/mcp/backend.c
    fake/tests/lint-layers >allowed.out
    grep -q "^1 passed, 0 failed" allowed.out
    refute grep -q "^note:" allowed.out
    rm fake/src/mcp/backend.c
    fake/tests/lint-layers >stale.out
    grep -q "^note: allowlist entry \"src/mcp/backend.c control/client.h\" matches no include" stale.out
    grep -q "^1 passed, 0 failed" stale.out
    printf "#include \"control/client.h\"\n" >fake/src/mcp/session.c
    rc=0; fake/tests/lint-layers >other.out || rc=$?
    test "$rc" = 1
    grep -q "^src/mcp/session.c:1: #include \"control/client.h\": mcp and control are both boundaries" other.out
'
test_done
