#!/usr/bin/env bash
# t1320-report-index: the campaign index (`faultline report --index DIR...` and
# `--index-history`) over three real runs of the reference agent through the mock model: one
# row per run, newest first, its verdict, score, outcome mix and cost as in its report, a
# relative link to its HTML report that resolves; a hostile report name (markup, a
# javascript: folder) is escaped and encoded; HTML, Markdown and JSON; an entry that is not a
# report is named on stderr, the rest still indexed (exit 2); usage errors (exit 64).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
make_project "$TMP/p"
write_exp "$TMP/p/a.yaml" index-a "$RUN_AGENT" "true"
write_exp "$TMP/p/b.yaml" index-b "$RUN_AGENT" "true" "model: {mock: pricey.yaml}"
commit "$TMP/p"
cd "$TMP"

HOSTILE_DIR='out/javascript:alert(2)'
HOSTILE="$HOSTILE_DIR/<img src=x onerror=alert(1)>.json"
export HOSTILE_DIR HOSTILE
# run NAME EXP OUT: a quiet run, its exit code in NAME.rc
run() {
    local rc=0
    timeout 60 "$FAULTLINE" run "p/$2" --out "$TMP/$3" --quiet >"$1.out" 2>"$1.err" || rc=$?
    echo "$rc" >"$1.rc"
}
run a a.yaml out/a.json
run b b.yaml out/b.json
run c a.yaml "$HOSTILE"
# the runs' order, to the second (runs a second apart could share one)
touch -d @1700000100 out/a.json
touch -d @1700000200 out/b.json
touch -d @1700000300 "$HOSTILE"

mkdir -p idx

# urldecode PATH: the percent-decoding of a link
urldecode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$1"; }
export -f urldecode

test_expect "three real runs index as three rows, newest first, with their figures (HTML)" '
    for n in a b c; do test "$(cat $n.rc)" = 0 || { cat $n.err; exit 1; }; done
    test "$(jq -r .verdict out/b.json)" = scored
    test -s "$HOSTILE" || { cat c.err; exit 1; }
    "$FAULTLINE" report --index out "$HOSTILE_DIR" -o idx/index.html 2>idx.err
    test ! -s idx.err
    xmllint --noout idx/index.html
    test "$(xmllint --xpath "count(//table[@class=\"index\"]/tr)" idx/index.html)" = 4
    for i in 2 3 4; do xmllint --xpath "string(//table[@class=\"index\"]/tr[$i]/td[2])" idx/index.html | tr -d "\n"; echo; done >names.txt
    test "$(tr "\n" " " <names.txt)" = "index-a index-b index-a "
    row() { xmllint --xpath "string(//table[@class=\"index\"]/tr[$1]/td[$2])" idx/index.html; }
    test "$(row 2 1)" = "2023-11-14 22:18:20"
    test "$(row 3 3)" = "$(jq -r .verdict out/b.json)"
    test "$(row 3 4)" = "$(jq -r .resilience_score out/b.json | xargs printf "%.2f")"
    test "$(jq -r "[.repetitions[].cost_usd // 0] | add > 0.01" out/b.json)" = true
    test "$(row 3 6)" = "$(jq -r "[.repetitions[].cost_usd // 0] | add" out/b.json | xargs printf "%.4f")"
    want=$(jq -r "[.result.outcomes | to_entries[] | select(.value > 0) | \"\(.key) \(.value)\"] | sort | join(\", \")" out/b.json)
    test "$(row 3 5 | tr -d " " | tr "," "\n" | sort | tr "\n" "," | sed "s/,\$//")" = "$(printf "%s" "$want" | tr -d " " | tr "," "\n" | sort | tr "\n" "," | sed "s/,\$//")"
'

test_expect "each link is relative to the index and opens that run's HTML report" '
    xmllint --xpath "//a/@href" idx/index.html | sed "s/^ href=\"//; s/\"\$//" >hrefs.txt
    test "$(wc -l <hrefs.txt)" = 3
    while read -r h; do
        case $h in ../out/*) ;; *) echo "not relative: $h"; exit 1 ;; esac
        f=$(urldecode "$h")
        test -f "idx/$f"
        case $f in *.html) ;; *) echo "not the HTML report: $f"; exit 1 ;; esac
    done <hrefs.txt
    test "$(sed -n 1p hrefs.txt)" = "../out/javascript%3Aalert%282%29/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E.html"
'

test_expect "a hostile report name is text: no element, handler or javascript: URL from it" '
    test "$(xmllint --xpath "count(//script | //img | //iframe | //object | //embed)" idx/index.html)" = 0
    test "$(xmllint --xpath "count(//@*[starts-with(name(), \"on\")] | //@src)" idx/index.html)" = 0
    test "$(xmllint --xpath "count(//a[starts-with(@href, \"javascript\")])" idx/index.html)" = 0
    xmllint --xpath "string(//table[@class=\"index\"]/tr[2]/td[7])" idx/index.html | grep -qF "<img src=x onerror=alert(1)>.json"
    test "$(xmllint --xpath "string(//meta[@http-equiv=\"Content-Security-Policy\"]/@content)" idx/index.html | cut -d";" -f1)" = "default-src '"'"'none'"'"'"
'

test_expect "Markdown and JSON indexes hold the same rows" '
    "$FAULTLINE" report --index out "$HOSTILE_DIR" --format md >idx.md
    test "$(grep -c "^| " idx.md)" = 5
    grep -q "^| --- | --- | --- | ---: | --- | ---: | --- |\$" idx.md
    grep "^| 2023" idx.md | while read -r l; do test "$(printf "%s" "$l" | sed "s/\\\\|//g" | tr -cd "|" | wc -c)" = 8; done
    grep -qF "](out/b.md)" idx.md || grep -qF "](./out/b.md)" idx.md
    "$FAULTLINE" report --index out "$HOSTILE_DIR" --format json >idx.json
    test "$(jq -r "[.runs[].experiment] | join(\" \")" idx.json)" = "index-a index-b index-a"
    test "$(jq -r ".runs[1].resilience_score" idx.json)" = "$(jq -r .resilience_score out/b.json)"
    test "$(jq -r ".runs[1].link" idx.json)" = "./out/b.json"
    test "$(jq ".errors | length" idx.json)" = 0
'

test_expect "bad entries: each named on stderr, the rest still indexed, exit 2" '
    echo "{\"not\": \"a report\"}" >out/notes.json
    rc=0; "$FAULTLINE" report --index out /nonexistent/x --format json >bad.json 2>bad.err || rc=$?
    rm out/notes.json
    test "$rc" = 2
    grep -qF "not indexed: out/notes.json: " bad.err
    grep -qF "not indexed: /nonexistent/x: no such file or folder" bad.err
    test "$(jq ".runs | length" bad.json)" = 2
    test "$(jq ".errors | length" bad.json)" = 2
    rc=0; "$FAULTLINE" report --index /nonexistent/x 2>none.err >/dev/null || rc=$?
    test "$rc" = 1
    grep -q "nothing to index" none.err
'

test_expect "--index-history: the recorded runs, newest first; --experiment, --limit" '
    "$FAULTLINE" report --index-history --format json >h.json
    test "$(jq -r "[.runs[].experiment] | join(\" \")" h.json)" = "index-a index-b index-a"
    test "$(jq -r ".runs[0].history_id > .runs[1].history_id" h.json)" = true
    test "$(jq -r ".runs[2].source" h.json)" = "$TMP/out/a.json"
    "$FAULTLINE" report --index-history --experiment index-b --format json >hb.json
    test "$(jq -r "[.runs[].experiment] | join(\" \")" hb.json)" = index-b
    "$FAULTLINE" report --index-history --limit 1 -o idx/h.html
    test "$(xmllint --xpath "count(//table[@class=\"index\"]/tr)" idx/h.html)" = 2
'

test_expect "usage errors exit 64" '
    rc=0; "$FAULTLINE" report --index out --format junit >/dev/null 2>u1.err || rc=$?
    test "$rc" = 64
    rc=0; "$FAULTLINE" report --index >/dev/null 2>u2.err || rc=$?
    test "$rc" = 64
    rc=0; "$FAULTLINE" report --index-history out >/dev/null 2>u3.err || rc=$?
    test "$rc" = 64
    rc=0; "$FAULTLINE" report out/a.json out/b.json >/dev/null 2>u4.err || rc=$?
    test "$rc" = 64
'

test_done
