#!/usr/bin/env bash
# Real clients of a coding agent's day, through the egress proxy under `faultline run` in the
# native sandbox: git clones a repository from a code-host stand-in (dumb HTTP) and npm installs
# a package from a registry stand-in (both local servers, reached by name through the run's
# --resolve). The baseline does both. In the faulted repetition the registry stops resolving
# (egress.dns_fail) and the code host revokes the credential after two requests
# (egress.credential_401, after_calls 2): what each client shows is checked, with the events.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
command -v npm >/dev/null || { echo "npm missing: run scripts/bootstrap"; exit 1; }

# the stand-ins: one local HTTP server; /repo.git a bare repository served the dumb way, /left-pad
# the registry's document for the package, /tarballs its tarball
W=$TMP/www
mkdir -p "$W/tarballs" "$TMP/src/package"
git init -q "$TMP/seed-repo"
echo "hello from the code host" >"$TMP/seed-repo/README"
git -C "$TMP/seed-repo" add README
git -C "$TMP/seed-repo" -c user.name=t -c user.email=t@t commit -qm first
git clone -q --bare "$TMP/seed-repo" "$W/repo.git"
git -C "$W/repo.git" update-server-info
echo '{"name":"left-pad","version":"1.3.0","main":"index.js"}' >"$TMP/src/package/package.json"
echo 'module.exports = (s, n) => String(s).padStart(n);' >"$TMP/src/package/index.js"
tar -C "$TMP/src" -czf "$W/tarballs/left-pad-1.3.0.tgz" package
HP=$(free_port)
python3 - "$W" "$HP" <<'PY'
import base64, hashlib, json, sys
w, port = sys.argv[1], sys.argv[2]
d = open(w + "/tarballs/left-pad-1.3.0.tgz", "rb").read()
doc = {"name": "left-pad", "dist-tags": {"latest": "1.3.0"}, "versions": {"1.3.0": {
    "name": "left-pad", "version": "1.3.0", "main": "index.js",
    "dist": {"tarball": "http://registry.test:%s/tarballs/left-pad-1.3.0.tgz" % port,
             "shasum": hashlib.sha1(d).hexdigest(),
             "integrity": "sha512-" + base64.b64encode(hashlib.sha512(d).digest()).decode()}}}}
open(w + "/left-pad", "w").write(json.dumps(doc))
PY
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$W" "$HP" >/dev/null 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/left-pad" || echo "the stand-ins did not start"
export HP

make_project "$TMP/p"
AGENT="export GIT_TERMINAL_PROMPT=0; if git clone -q http://code.test:$HP/repo.git c1 2>git.err; then echo clone-ok; cat c1/README; else echo clone-failed; cat git.err; fi; if npm install --no-audit --no-fund --no-update-notifier --registry http://registry.test:$HP/ left-pad >npm.out 2>&1; then echo npm-ok; node -e 'console.log(\"[\" + require(\"left-pad\")(\"x\", 3) + \"]\")'; else echo npm-failed; cat npm.out; fi"
write_exp "$TMP/p/exp.yaml" clients "$AGENT" "true"
set_faults "$TMP/p/exp.yaml" '  - id: egress.dns_fail
    match: {host: registry.test}
  - id: egress.credential_401
    match: {host: code.test}
    after_calls: 2'
commit "$TMP/p"
cd "$TMP"
rc=0
timeout 300 "$FAULTLINE" run p/exp.yaml --out "$TMP/out/r.json" --resolve "registry.test:$HP:127.0.0.1" \
    --resolve "code.test:$HP:127.0.0.1" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { tail -n 20 run.err; exit 1; }
'

test_expect "baseline: git cloned and npm installed through the egress proxy" '
    o=out/r/rep-000/agent.out
    cat $o
    grep -qx clone-ok $o
    grep -qx "hello from the code host" $o
    grep -qx npm-ok $o
    grep -qx "\[  x\]" $o
    e=out/r/rep-000/events.jsonl
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"code.test\" and .status == 200)" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .status == 200)" $e
    jq -se "any(.[]; .kind == \"fault_injected\") | not" $e
'

test_expect "faulted: git sees the revoked credential, npm the unresolvable registry, with the canary" '
    o=out/r/rep-001/agent.out
    c=$(jq -r .canary out/r/rep-001/plan.json)
    cat $o
    grep -qx clone-failed $o
    grep -qi "authentication\|401\|could not read Username" $o
    grep -qx npm-failed $o
    grep -q "502" $o
    grep -q "$c" $o
    e=out/r/rep-001/events.jsonl
    jq -se "map(select(.kind == \"fault_injected\") | .fault) | index(\"egress.dns_fail\") != null and index(\"egress.credential_401\") != null" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"code.test\" and .status == 401 and .faulted == true)" $e
    jq -se "[.[] | select(.kind == \"egress_request\" and .host == \"code.test\" and .status == 200)] | length == 2" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .status == 502 and .faulted == true)" $e
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/r"
'
test_done
