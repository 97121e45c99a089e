#!/usr/bin/env bash
# A JSON parse error names the file, line and column but never quotes the input: jansson's
# "near '...'" excerpt is a piece of the file cut where redaction can no longer recognise a
# secret (an AWS key cut at its twelfth character), so every reader drops it
# (util/text.h: text_parse_error). Plans, price files and hook settings are checked here; run
# folders in tests/unit/test_score.c, experiment files in tests/data/validate.
. "$(dirname "$0")/lib.sh"

KEY=AKIAIOSFODNN7EXAMPLE
printf '{"version":1,"faults":[%s]}' "$KEY" >"$TMP/plan.json"
printf '{"models":{"m":%s}}' "$KEY" >"$TMP/prices.json"
mkdir -p "$TMP/proj/.claude"
printf '{"hooks":%s}' "$KEY" >"$TMP/proj/.claude/settings.json"

test_expect "mcp --plan: the error has FILE:LINE:COL and no piece of the key" '
    rc=0; "$FAULTLINE" mcp --plan plan.json -- true 2>err || rc=$?
    test "$rc" = 2
    grep -q "plan.json:1:[0-9]*: invalid token" err
    refute grep -q "AKIAIOSF" err
'
test_expect "proxy --plan and --prices: no piece of the key" '
    printf "{\"version\":1,\"run\":\"r\",\"canary\":\"E-FAULTLINE-00000000\",\"faults\":[]}" >good.json
    rc=0; timeout 10 "$FAULTLINE" proxy --plan plan.json --events ev.jsonl 2>err1 || rc=$?
    test "$rc" = 2
    rc=0; timeout 10 "$FAULTLINE" proxy --plan good.json --events ev.jsonl --prices prices.json 2>err2 || rc=$?
    test "$rc" != 0
    grep -q "prices.json:1:[0-9]*:" err2
    refute grep -q "AKIAIOSF" err1 err2
'
test_expect "agent: an invalid .claude/settings.json is named, not quoted" '
    cd proj
    rc=0; timeout 10 "$FAULTLINE" agent --prompt hi --base-url http://127.0.0.1:9 2>err || rc=$?
    test "$rc" = 2
    grep -q "settings.json:1:[0-9]*:" err
    refute grep -q "AKIAIOSF" err
'
test_done
