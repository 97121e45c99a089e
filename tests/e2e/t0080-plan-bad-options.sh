#!/usr/bin/env bash
# A hand-written plan whose fault kind or option values break the catalog is refused by
# `faultline mcp --plan` and `faultline proxy --plan` (exit 2) with a message naming the fault,
# the option and what was expected; a bad value no longer reads as the catalog default.
. "$(dirname "$0")/lib.sh"

head='{"version":1,"run":"r","canary":"E-FAULTLINE-00000000","faults":['
printf '%s%s' "$head" '{"kind":"llm.upstream_5xx","injectors":["controller-model"],"options":{"status":501}}]}' >"$TMP/status.json"
printf '%s%s' "$head" '{"kind":"tool.eror","injectors":["mcp"]}]}' >"$TMP/kind.json"
printf '%s%s' "$head" '{"kind":"tool.error","injectors":["mcp"],"options":{"mesage":"x"}}]}' >"$TMP/extra.json"
printf '%s%s' "$head" '{"kind":"tool.latency","injectors":["mcp"],"options":{"delay_ms":"fast"}}]}' >"$TMP/type.json"

test_expect "mcp --plan: an off-list value, an unknown kind, an unknown option, a wrong type exit 2" '
    for f in status kind extra type; do
        rc=0; timeout 10 "$FAULTLINE" mcp --plan $f.json -- true 2>$f.err || rc=$?
        test "$rc" = 2
    done
    grep -q "faults\[0\].options.status: expected one of 500, 502, 503, 529" status.err
    grep -q "faults\[0\].kind: unknown fault .tool.eror. (did you mean .tool.error.?)" kind.err
    grep -q "faults\[0\].options.mesage: tool.error has no such option" extra.err
    grep -q "faults\[0\].options.delay_ms: expected an integer" type.err
'
test_expect "proxy --plan: the same plans exit 2 with the same messages" '
    for f in status kind extra type; do
        rc=0; timeout 10 "$FAULTLINE" proxy --plan $f.json --events ev.jsonl 2>p$f.err || rc=$?
        test "$rc" = 2
    done
    grep -q "faults\[0\].options.status: expected one of 500, 502, 503, 529" pstatus.err
    grep -q "faults\[0\].kind: unknown fault .tool.eror. (did you mean .tool.error.?)" pkind.err
    grep -q "faults\[0\].options.mesage: tool.error has no such option" pextra.err
    grep -q "faults\[0\].options.delay_ms: expected an integer" ptype.err
'
test_expect "every example experiment gives plans that load" '
    for x in "$EXAMPLES"/*.yaml; do
        for rep in 0 1 2 3 4 5; do
            "$FAULTLINE" plan "$x" --rep $rep >p.json 2>/dev/null || continue
            rc=0; timeout 10 "$FAULTLINE" mcp --plan p.json -- true 2>perr || rc=$?
            if grep -q "faults\[" perr; then cat perr; echo "$x rep $rep"; exit 1; fi
        done
    done
'
test_done
