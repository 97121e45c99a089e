#!/usr/bin/env bash
# docs/events.md's common-fields table and per-kind sections are generated from the kinds table
# (src/events/kinds.c) by `faultline list --markdown-events PAGE`: this fails when the page is
# stale (regenerate with: faultline list --markdown-events docs/events.md > events.md &&
# mv events.md docs/events.md).
. "$(dirname "$0")/lib.sh"

test_expect "docs/events.md equals its regenerated self" '
    "$FAULTLINE" list --markdown-events "$FAULTLINE_ROOT/docs/events.md" >events.md
    diff -u "$FAULTLINE_ROOT/docs/events.md" events.md
'

test_expect "a hand edit inside a generated region is caught" '
    sed "s/^| \`seq\` | integer | yes |/| \`seq\` | string | yes |/" \
        "$FAULTLINE_ROOT/docs/events.md" >edited.md
    if cmp -s edited.md "$FAULTLINE_ROOT/docs/events.md"; then echo "sed changed nothing"; exit 1; fi
    "$FAULTLINE" list --markdown-events edited.md >regen.md
    if cmp -s regen.md edited.md; then echo "the edit survived regeneration"; exit 1; fi
    diff -u "$FAULTLINE_ROOT/docs/events.md" regen.md
'

test_expect "prose outside the regions is kept byte for byte" '
    printf "%s\n" "# x" "<!-- generated: common -->" "<!-- end generated: common -->" \
        "hand-written words" "<!-- generated: kinds -->" "<!-- end generated: kinds -->" \
        "the end" >page.md
    "$FAULTLINE" list --markdown-events page.md >out.md
    grep -qx "hand-written words" out.md
    test "$(tail -n 1 out.md)" = "the end"
    test "$(head -n 1 out.md)" = "# x"
'

test_expect "every kind of the page has a section" '
    for k in plan_loaded model_request model_response tool_call tool_result egress_request \
             gate_decision fault_injected effect abort verify warning run_start agent_exit run_end; do
        grep -q "^### $k: " "$FAULTLINE_ROOT/docs/events.md" || { echo "no section for $k"; exit 1; }
    done
'

test_expect "a page without its markers is refused with a message" '
    printf "# no markers\n" >bare.md
    rc=0
    "$FAULTLINE" list --markdown-events bare.md >out.md 2>err.txt || rc=$?
    test "$rc" = 2
    grep -q "generated: common" err.txt
    rc=0
    "$FAULTLINE" list --markdown-events missing.md >out.md 2>err.txt || rc=$?
    test "$rc" = 2
    grep -q "missing.md" err.txt
'
test_done
