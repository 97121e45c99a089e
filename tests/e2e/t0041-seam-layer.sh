#!/usr/bin/env bash
# The seam's layer rule (docs/architecture.md, "Layers: where the seam sits"): src/seam/ sits
# below every boundary component, so it includes nothing of theirs (nor the controller's, the
# CLI's, the agent's); above it, components use seam.h only: the control API client, the
# breaker and the queue are the seam's own (their unit tests aside; and the gate, a process
# per tool call that makes one request, uses the client itself: docs/architecture.md). And one plan reader: the
# seam reads no file and parses no JSON text itself (plans come from plan_load; the client
# parses only the controller's replies).
. "$(dirname "$0")/lib.sh"

# matches PATTERN FILE...: prints grep -HnE's matches; fails only when grep itself fails
# (a missing file), so an empty answer means "none".
matches() {
    local rc=0
    grep -HnE "$@" || rc=$?
    test "$rc" -le 1
}
export -f matches

test_expect "src/seam includes only seam, codec, plan, events, experiment and util headers" '
    cd "$FAULTLINE_ROOT"
    all=$(matches "^#include \"" src/seam/*.c src/seam/*.h)
    test -n "$all"
    bad=$(printf "%s\n" "$all" | grep -vE "#include \"(seam|codec|plan|events|experiment|util)/" || true)
    if [ -n "$bad" ]; then echo "$bad"; exit 1; fi
'

test_expect "outside src/seam, only seam/seam.h is included" '
    cd "$FAULTLINE_ROOT"
    all=$(matches -r "^#include \"seam/" src tests/unit tests/fuzz bench)
    printf "%s\n" "$all" | grep -q "^src/mcp/backend.h:"
    bad=$(printf "%s\n" "$all" | grep -vE "^src/seam/|^tests/unit/test_seam(_[a-z]+)?\.c:" |
        grep -v "#include \"seam/seam.h\"" | grep -vx "src/gate/gate.c:[0-9]*:#include \"seam/client.h\"" || true)
    if [ -n "$bad" ]; then echo "$bad"; exit 1; fi
'

test_expect "the seam reads plans only through plan_load" '
    cd "$FAULTLINE_ROOT"
    bad=$(matches "json_load(b|s|f|_file)?\(|fs_read|[^_a-z]open\(" src/seam/seam.c)
    if [ -n "$bad" ]; then echo "$bad"; exit 1; fi
    grep -q "plan_load(" src/seam/seam.c
'

test_done
