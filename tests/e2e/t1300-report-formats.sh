#!/usr/bin/env bash
# t1300-report-formats: `faultline report` over a run folder (a golden scoring case made
# hostile) and over report files: the HTML page is one well-formed, self-contained document
# (a CSP that forbids every request, no script, no handler, no external reference) that shows
# hostile run content (<script>, onerror=, javascript:, </style>, invalid UTF-8, a 10 MB agent
# output) as text; JUnit is valid against tests/data/junit/junit.xsd (xmllint); Markdown keeps
# its table structure and stays under 65,000 characters whatever the report's size; the badge
# is SVG; json is the re-scored report; bad input gets a clear error.
. "$(dirname "$0")/lib.sh"

XSD="$FAULTLINE_ROOT/tests/data/junit/junit.xsd"
export XSD
cp -r "$FAULTLINE_ROOT/tests/data/score/world-effects/run" "$TMP/run"
cd "$TMP"
canary=$(jq -r .canary run/rep-005/plan.json)
export canary
# hostile content: the agent's output (with the canary, invalid UTF-8, 10 MB of filler before
# the end) and a tool name and a model name in the events
{
    head -c 10485760 /dev/zero | tr '\0' 'x'
    printf '\n<script>alert(1)</script> <img src=x onerror="alert(2)"> <a href="javascript:alert(3)">x</a> </style><style>body{display:none}</style>\n'
    printf 'bad utf8: \xff\xfe\xc3( end\n'
    printf 'the canary %s was reported\n' "$canary"
} >run/rep-005/agent.out
printf '%s\n' '{"t":1150,"seq":1150,"run":"r5","src":"mcp","kind":"tool_call","tool":"<script>alert(4)</script>","server":"x\"><svg onload=alert(5)>","id":"h1","args":{}}' \
    '{"t":1151,"seq":1151,"run":"r5","src":"controller","kind":"model_request","id":"m9","api":"anthropic-messages","model":"</style><script>alert(6)</script>","stream":false,"path":"/v1/messages","messages":1,"tools":0}' \
    >>run/rep-005/events.jsonl

rc=0
"$FAULTLINE" report run -o r.html 2>err.txt || rc=$?
echo "$rc" >rc.txt

x() { xmllint --xpath "$1" r.html; }
export -f x

test_expect "report RUN_DIR writes the HTML page (exit 0), small despite a 10 MB output" '
    test "$(cat rc.txt)" = 0 || { cat err.txt; exit 1; }
    test "$(stat -c %s r.html)" -lt 1000000
    grep -q "its last 65536 bytes of" r.html
'

test_expect "the page is one well-formed document with a CSP that forbids every request" '
    xmllint --noout r.html
    test "$(x "string(//meta[@http-equiv=\"Content-Security-Policy\"]/@content)")" = \
        "default-src '"'"'none'"'"'; style-src '"'"'unsafe-inline'"'"'; img-src data:; base-uri '"'"'none'"'"'; form-action '"'"'none'"'"'"
    test "$(x "count(//script | //img | //iframe | //link | //object | //embed | //a)")" = 0
    test "$(x "count(//@src | //@href | //@action | //@*[starts-with(name(), \"on\")])")" = 0
    test "$(x "count(//style)")" = 1
    refute grep -q "http://\|https://" r.html
'

test_expect "hostile content is shown as text" '
    x "string(//section[@class=\"rep\"][6]//div[@class=\"out\"])" >out.txt
    grep -qF "<script>alert(1)</script>" out.txt
    grep -qF "onerror=\"alert(2)\"" out.txt
    grep -qF "href=\"javascript:alert(3)\"" out.txt
    grep -qF "</style><style>body{display:none}</style>" out.txt
    grep -qF "bad utf8: $(printf "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd(") end" out.txt
    x "//title" >titles.txt
    grep -qF "tool=&lt;script&gt;alert(4)&lt;/script&gt;" titles.txt
    grep -qF "model=&lt;/style&gt;&lt;script&gt;alert(6)&lt;/script&gt;" titles.txt
'

test_expect "the page shows the verdict, score, probes, repetitions, timeline, canary and ledger" '
    test "$(x "string(//header//span[@class=\"verdict\"])")" = scored
    test "$(x "string(//header//span[@class=\"score\"])")" = "$(printf "%.2f" "$(jq -r .resilience_score <("$FAULTLINE" score run --json))")"
    test "$(x "count(//h2[.=\"Probes\"]/following-sibling::div[1]/table/tr)")" = 4
    x "string(//h2[.=\"Probes\"]/following-sibling::div[1]/table/tr[2])" | grep -q "task_success.*3 / 4.*75%.*30.1% – 95.4%.*no"
    test "$(x "count(//section[@class=\"rep\"])")" = 8
    test "$(x "count(//svg[@class=\"timeline\"])")" = 8
    test "$(x "string(//section[@class=\"rep\"][6]//mark)")" = "$canary"
    x "string(//section[@class=\"rep\"][6]//svg[@class=\"timeline\"])" | grep -q "fault_injected fault=.* canary=$canary"
    x "string(//section[@class=\"rep\"][6]//p[@class=\"bad\"])" | grep -qx "earliest violating effect: rep-005/events.jsonl line 6 (effect refunds-1)"
    x "string(//h2[.=\"Repetitions\"]/following-sibling::div[1]/table/tr[7])" | grep -q "HARMFUL_ACTION"
'

test_expect "a timeline with more events than can be drawn is aggregated, and says so" '
    cp -r run big
    for i in $(seq 1 3000); do
        printf "{\"t\":%d,\"seq\":%d,\"run\":\"r1\",\"src\":\"mcp\",\"kind\":\"tool_call\",\"tool\":\"t%d\",\"id\":\"b%d\"}\n" $((2000 + i)) $((2000 + i)) $i $i
    done >>big/rep-001/events.jsonl
    "$FAULTLINE" report big -o big.html
    xmllint --noout big.html
    xmllint --xpath "string(//section[@class=\"rep\"][2])" big.html | grep -q "too many to draw one by one, so each lane is aggregated into 160 time bins"
    test "$(xmllint --xpath "count(//section[@class=\"rep\"][2]//svg[@class=\"timeline\"]//circle)" big.html)" = 0
    test "$(xmllint --xpath "count(//section[@class=\"rep\"][2]//svg[@class=\"timeline\"]//rect)" big.html)" -le 1280
'

test_expect "the world's ledger is shown with the earliest violating effect marked" '
    cp -r "$FAULTLINE_ROOT/tests/data/score/world-ledger/run" ledger
    "$FAULTLINE" report ledger -o ledger.html
    xmllint --noout ledger.html
    "$FAULTLINE" score ledger --json >ledger.json || true
    rep=$(jq -r "[.repetitions[] | select(any(.invariants[]?; .result == \"fail\" and (.evidence.file // \"\" | endswith(\"ledger.json\"))))][0].rep" ledger.json)
    test "$rep" != null
    idx=$(jq -r "[.repetitions[$rep].invariants[] | select(.result == \"fail\" and (.evidence.file // \"\" | endswith(\"ledger.json\"))) | .evidence.index] | min" ledger.json)
    s="//section[@class=\"rep\"][$((rep + 1))]"
    xmllint --xpath "string($s//h3[.=\"The world'"'"'s ledger\"])" ledger.html | grep -q ledger
    test "$(xmllint --xpath "count($s//tr[@class=\"violation\"])" ledger.html)" = 1
    test "$(xmllint --xpath "normalize-space($s//tr[@class=\"violation\"]/td[1])" ledger.html)" = "$idx ⚠"
'

test_expect "JUnit: valid against the schema, a testcase per probe and invariant, failures with reasons" '
    "$FAULTLINE" report run --format junit -o junit.xml
    xmllint --noout --schema "$XSD" junit.xml
    test "$(xmllint --xpath "count(//testcase[@classname=\"world-effects.probe\"])" junit.xml)" = 3
    test "$(xmllint --xpath "count(//testcase[@classname=\"world-effects.invariant\"])" junit.xml)" = 16
    test "$(xmllint --xpath "string(/testsuites/testsuite/@failures)" junit.xml)" = "$(xmllint --xpath "count(//failure)" junit.xml)"
    xmllint --xpath "string(//testcase[@name=\"no_duplicate_side_effect\"]/failure/@message)" junit.xml |
        grep -q "failed in 1 of 8 repetitions; first rep 5: two effects share a collection and business key (or dedupe key); earliest violating event: rep-005/events.jsonl line 12 (effect)"
    test "$(xmllint --xpath "string(//property[@name=\"rep-005.canary\"]/@value)" junit.xml)" = "$canary"
    test "$(xmllint --xpath "count(//testcase[@name=\"canary_untouched\"]/skipped)" junit.xml)" = 1
'

test_expect "JUnit: a runner error is a testcase with <error>, hostile names escaped, still valid" '
    jq ".result.repetitions[2].status = \"error\" | .result.repetitions[2].status_reason = \"<b>\\u0001 & \\\"quoted\\\"\" | .result.experiment.name = \"x<y&z\" | .experiment.name = \"x<y&z\" | .run_dir = \"/nonexistent\"" \
        <<<"$("$FAULTLINE" report run --format json)" >err.json
    "$FAULTLINE" report err.json --format junit -o err.xml
    xmllint --noout --schema "$XSD" err.xml
    test "$(xmllint --xpath "string(//testcase[@classname=\"x<y&z.repetition\"]/error/@message)" err.xml)" = "<b>$(printf "\xef\xbf\xbd") & \"quoted\""
    test "$(xmllint --xpath "string(/testsuites/testsuite/@errors)" err.xml)" = 1
'

test_expect "json: the report re-scored, the same result as faultline score" '
    "$FAULTLINE" report run --format json >re.json
    "$FAULTLINE" score run --json >score.json || true
    diff <(jq -S .result re.json) <(jq -S . score.json)
    test "$(jq -r .verdict re.json)" = scored
    test "$(jq -r .resilience_score re.json)" = "$(jq -r .resilience_score score.json)"
'

test_expect "the badge is SVG with the score, coloured by the verdict" '
    "$FAULTLINE" report run --format badge -o badge.svg
    xmllint --noout badge.svg
    test "$(xmllint --xpath "string(//*[local-name()=\"title\"])" badge.svg)" = "faultline: 75"
    grep -q "fill=\"#dfb317\"" badge.svg
'

test_expect "Markdown: tables keep their structure and the page stays under 65,000 characters" '
    long=$(head -c 3000 /dev/zero | tr "\0" "|")
    jq --arg long "$long" "
        .repetitions = [range(0; 5000) | {rep: ., faulted: true, status: \"error\", error: (\"a|b\\nc \" + \$long), cost_usd: 0.5, duration_ms: 1000}]
        | .result.repetitions = [range(0; 5000) | {rep: ., dir: \"rep-x\", faulted: true, status: \"error\", outcome: \"SAFE_FAILURE\"}]
        | .result.warnings = [range(0; 500) | {code: \"w|x\", message: \$long}]
        | .run_dir = \"/nonexistent\"" re.json >huge.json
    "$FAULTLINE" report huge.json --format md -o huge.md
    test "$(wc -m <huge.md)" -lt 65000
    grep -q "more repetitions left out to keep this under 65000 characters" huge.md
    grep -q "^### Warnings" huge.md
    # every row of a table has the header'"'"'s number of unescaped pipes
    awk "/^\\|/ { s = \$0; gsub(/\\\\\\|/, \"\", s); n = gsub(/\\|/, \"\", s); if (!h) h = n; if (n != h) { print NR \": \" n \" != \" h; bad = 1 } next } { h = 0 } END { exit bad }" huge.md
    "$FAULTLINE" report run --format md -o small.md
    grep -q "^| task\\\\_success | 1 | 3/4 | 75% | 30%–95% | no |\$" small.md
    awk "/^\\|/ { s = \$0; gsub(/\\\\\\|/, \"\", s); n = gsub(/\\|/, \"\", s); if (!h) h = n; if (n != h) bad = 1; next } { h = 0 } END { exit bad }" small.md
'

test_expect "bad input: a clear error (exit 1), a bad format (exit 64)" '
    rc=0; "$FAULTLINE" report nope.json 2>e1 || rc=$?
    test "$rc" = 1; grep -q "cannot read .nope.json.: no such file or folder" e1
    echo "{\"a\": 1}" >notreport.json
    rc=0; "$FAULTLINE" report notreport.json 2>e2 || rc=$?
    test "$rc" = 1; grep -q "is not a faultline report" e2
    printf "{\"a\": \n" >broken.json
    rc=0; "$FAULTLINE" report broken.json 2>e3 || rc=$?
    test "$rc" = 1; grep -q "broken.json:2:" e3
    rc=0; "$FAULTLINE" report run --format pdf 2>e4 || rc=$?
    test "$rc" = 64; grep -q "pdf" e4
'

test_done
