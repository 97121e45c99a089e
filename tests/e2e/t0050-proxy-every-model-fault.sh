#!/usr/bin/env bash
# Every fault the catalog gives to the controller-model injector has a handler in the proxy,
# and a hand-written plan that omits the options gets the catalog's defaults: the plan holds
# one fault per controller-model row of `faultline list --json`, with no options but the
# required ones; each is injected (fault_injected, no fault_not_applied), and every detail
# field named after an option carries that option's catalog default.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

"$FAULTLINE" list --json | jq -c '[.faults[] | select(.injectors | index("controller-model"))]' \
    >"$TMP/rows.json"
# Fault i matches model "m-i"; required options (no default) get a test value.
jq -c '[to_entries[] | {kind: .value.id, safety: .value.safety, injectors: ["controller-model"],
        match: {model: "m-\(.key)"},
        options: ([.value.options[] | select(.required) | {(.name): "faultline-test-model"}] | add // {})}]' \
    "$TMP/rows.json" >"$TMP/faults.json"
write_plan "$TMP/plan.json" "$(cat "$TMP/faults.json")" 100
export ROWS="$TMP/rows.json"

start_upstream
start_proxy "$TMP/plan.json" --i-have-a-sandbox

test_expect "the catalog gives the controller-model injector at least the five llm.* faults" '
    test "$(jq length "$ROWS")" -ge 5
'

test_expect "each controller-model row is injected, with no fault_not_applied" '
    n=$(jq length "$ROWS")
    for i in $(seq 0 $((n - 1))); do
        body="{\"model\":\"m-$i\",\"max_tokens\":16,\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},{\"role\":\"user\",\"content\":\"c\"}]}"
        curl -sS -m 20 -o /dev/null "http://$A/v1/messages" -H "x-api-key: k" -d "$body"
    done
    for i in $(seq 0 $((n - 1))); do
        id=$(jq -r ".[$i].id" "$ROWS")
        c=$(ev fault_injected "select(.fault == \"$id\")" | wc -l)
        if [ "$c" -ne 1 ]; then echo "$id: $c fault_injected events"; exit 1; fi
    done
    if ev warning "select(.code == \"fault_not_applied\")" | grep -q .; then
        ev warning; exit 1
    fi
'

test_expect "detail fields named after an option carry the catalog default (plan omitted them)" '
    n=$(jq length "$ROWS"); checked=0
    for i in $(seq 0 $((n - 1))); do
        id=$(jq -r ".[$i].id" "$ROWS")
        ev fault_injected "select(.fault == \"$id\") | .detail" >d.json
        for opt in $(jq -r ".[$i].options[] | select(.default != null) | .name" "$ROWS"); do
            if jq -e "has(\"$opt\")" d.json >/dev/null; then
                want=$(jq -c ".[$i].options[] | select(.name == \"$opt\") | .default" "$ROWS")
                got=$(jq -c ".\"$opt\"" d.json)
                if [ "$want" != "$got" ]; then echo "$id.$opt: $got, catalog default $want"; exit 1; fi
                checked=$((checked + 1))
            fi
        done
    done
    echo "checked $checked"
    test "$checked" -ge 3
'

test_done
