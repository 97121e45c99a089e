#!/usr/bin/env bash
# `faultline report --format otlp`: a real run (the demo's tool-error experiment: the reference
# agent, the mock model, server-filesystem behind the shim, tool.error on write_file) exported
# as OpenTelemetry traces, read back by OpenTelemetry's own JSON encoder
# (tests/interop/otlp-roundtrip.mjs, @opentelemetry/otlp-transformer pinned): every span
# faultline wrote is what the official encoder writes for it. Then what the traces say: one
# trace per repetition with its root span, a span per model call with the GenAI attributes and
# token usage, a span per tool call with the MCP attributes, and the injected fault as an event
# of the write_file call, with the repetition's canary and error.type. The same run folder
# gives the same file; the run writes no .otlp.json by itself (on demand only).
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
chmod 711 "$TMP"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR" "$TMP/p"
NM=$(cd "$FAULTLINE_ROOT/examples/demo/node_modules" && pwd -P)
export NM
tar -C "$FAULTLINE_ROOT/examples/demo" --exclude=./node_modules --exclude='./package*.json' -cf - . |
    tar -C "$TMP/p" -xf -
git -C "$TMP/p" init -q
git -C "$TMP/p" add -A
git -C "$TMP/p" -c user.name=t -c user.email=t@localhost commit -qm demo
cd "$TMP"

test_expect "a real run, exported as OTLP/JSON (exit 0)" '
    test -x "$NM/.bin/mcp-server-filesystem" || { echo "server-filesystem missing: run scripts/bootstrap"; exit 1; }
    rc=0; timeout 300 "$FAULTLINE" run p/tool-error.yaml --ro-path "$NM" --quiet --out "$TMP/out/r.json" >run.out 2>run.err || rc=$?
    test "$(jq -r .verdict out/r.json)" = scored || { echo "rc $rc"; tail -n 20 run.err; exit 1; }
    refute test -e out/r.otlp.json
    "$FAULTLINE" report out/r.json --format otlp -o r.otlp.json
    "$FAULTLINE" report out/r --format otlp -o again.otlp.json
    cmp r.otlp.json again.otlp.json
'

test_expect "the official OpenTelemetry JSON encoder writes every span the same" '
    test -d "$FAULTLINE_ROOT/tests/interop/node_modules/@opentelemetry/otlp-transformer" || { echo "otlp-transformer missing: run scripts/bootstrap"; exit 1; }
    (cd "$FAULTLINE_ROOT/tests/interop" && timeout 60 node otlp-roundtrip.mjs "$TMP/r.otlp.json") >sum.json
    cat sum.json
'

test_expect "the traces: a root per repetition, model and tool spans, the fault on write_file" '
    canary=$(jq -r ".repetitions[1].canary" out/r.json)
    jq -e ".traces == 2 and .roots == 2 and .model >= 2 and .tools >= 2" sum.json
    jq -e --arg c "$canary" "[.faults[] | select(.span == \"tools/call write_file\" and .\"faultline.fault\" == \"tool.error\" and .\"faultline.canary\" == \$c and .error_type == \"tool.error\")] | length == 1" sum.json
    jq -e "[.resourceSpans[0].scopeSpans[0].spans[] | select(.parentSpanId == null)] | all(.name | test(\"^faultline repetition [01]$\"))" r.otlp.json
'
test_done
