#!/usr/bin/env bash
# The HTML report in a real browser: Debian's headless Chromium, driven by puppeteer-core
# (tests/interop/report-chromium.mjs), opens the report of a golden run made hostile (the
# agent's output and the events carry <script>, onerror=, javascript: URLs, an image from the
# network, </style> with a style that would hide the page, invalid UTF-8, 10 MB of output).
# Asserted: the page makes no request (each is recorded and aborted) and logs nothing to the
# console, no script or handler exists in its DOM, the body is displayed, the page fits a
# laptop's width (1280 px, no horizontal scroll), the screenshot is not blank, and the page's
# outline (headings and sections) is the golden one, so a layout regression is noticed
# (tests/data/report/outline-world-effects.txt; regenerate: FAULTLINE_REGENERATE=1). A control
# page proves the checker sees a request and a console error when there is one.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"

NM="$FAULTLINE_ROOT/tests/interop/node_modules"
GOLDEN="$FAULTLINE_ROOT/tests/data/report/outline-world-effects.txt"
CHECK="$FAULTLINE_ROOT/tests/interop/report-chromium.mjs"
export NM GOLDEN CHECK
cp -r "$FAULTLINE_ROOT/tests/data/score/world-effects/run" "$TMP/run"
cd "$TMP"
canary=$(jq -r .canary run/rep-005/plan.json)
{
    head -c 10485760 /dev/zero | tr '\0' 'x'
    printf '\n<script>document.title="PWNED"</script> <img src=x onerror="document.title=1">'
    printf ' <img src="http://127.0.0.1:9/leak.png"> <a href="javascript:alert(3)">x</a>'
    printf ' </style><style>body{display:none}</style>\nbad utf8: \xff\xfe\xc3( end\n'
    printf 'the canary %s was reported\n' "$canary"
} >run/rep-005/agent.out
printf '%s\n' '{"t":1150,"seq":1150,"run":"r5","src":"mcp","kind":"tool_call","tool":"<script>document.title=4</script>","server":"x\"><svg onload=alert(5)>","id":"h1","args":{}}' \
    '{"t":1151,"seq":1151,"run":"r5","src":"controller","kind":"model_request","id":"m9","api":"anthropic-messages","model":"</style><link rel=stylesheet href=http://127.0.0.1:9/x.css>","stream":false,"path":"/v1/messages","messages":1,"tools":0}' \
    >>run/rep-005/events.jsonl
"$FAULTLINE" report run -o r.html

test_expect "the checker sees a request and a console error on a page that has them (control)" '
    test -x /usr/bin/chromium || { echo "chromium missing: run scripts/bootstrap"; exit 1; }
    test -d "$NM/puppeteer-core" || { echo "puppeteer-core missing: run scripts/bootstrap"; exit 1; }
    printf "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\"><p>hi</p></body></html>" >ctl.html
    timeout 120 node "$CHECK" ctl.html ctl.png >ctl.json
    jq -e ".requests == [\"http://127.0.0.1:9/x.png\"]" ctl.json
    jq -e ".console | length >= 1" ctl.json
'

test_expect "the report in Chromium: no request, no console message, no script or handler" '
    timeout 120 node "$CHECK" r.html shot.png >r.json
    jq -c "del(.dom.outline)" r.json
    jq -e ".requests == [] and .console == [] and .errors == []" r.json
    jq -e ".dom.scripts == 0 and .dom.handlers == 0" r.json
    jq -e ".dom.title == \"faultline: world-effects\"" r.json
'

test_expect "the page is displayed, fits 1280 px and its screenshot is not blank" '
    jq -e ".dom.body_displayed and .dom.width <= 1280" r.json
    jq -e ".shot.width == 1280 and .shot.colours > 50 and .shot.ink > 0.02" r.json
'

test_expect "the page outline is the golden one" '
    jq -r ".dom.outline[]" r.json >outline.txt
    if [ -n "${FAULTLINE_REGENERATE:-}" ]; then cp outline.txt "$GOLDEN"; fi
    diff -u "$GOLDEN" outline.txt
'
test_done
