# tests/e2e/run/lib-run.sh: helpers for the `faultline run` tests (t09xx-run-*), sourced after
# lib.sh. A project is a git repository of its own under $TMP holding an experiment and the
# mock-model scripts below, committed, so the runner's clean-tree precondition holds.

# The reference agent answering through the mock model: it prints the model's reply.
RUN_AGENT='faultline agent --quiet --prompt "say hello"'

# make_project DIR: a fresh repository with mock scripts (hello.yaml: one text reply;
# pricey.yaml: a long reply, so that one call costs about $0.07 (5000 output tokens) at the default prices).
make_project() {
    local d=$1
    mkdir -p "$d"
    git -C "$d" init -q
    git -C "$d" config user.email t@example.invalid
    git -C "$d" config user.name test
    cat >"$d/hello.yaml" <<'Y'
name: hello
rules:
  - name: error-seen
    when: {last_tool_result_error: true}
    reply: {text: "the tool failed: {{last_tool_result}}"}
fallback:
  text: "hello from the mock model"
Y
    python3 - "$d/pricey.yaml" <<'PY'
import sys
open(sys.argv[1], "w").write("name: pricey\nrules: []\nfallback:\n  text: \"" + "expensive " * 2000 + "\"\n")
PY
}

# write_exp FILE NAME AGENT VERIFY [EXTRA_YAML]: an experiment with one llm.rate_limit fault
# (injected once; the reference agent retries it) and a cost ceiling of $1; EXTRA_YAML lines
# are appended (abort conditions, model, env...).
write_exp() {
    local f=$1 name=$2 agent=$3 verify=$4 extra=${5:-}
    {
        printf 'name: %s\n' "$name"
        printf "agent: '%s'\n" "${agent//\'/\'\'}"
        printf "verify: '%s'\n" "${verify//\'/\'\'}"
        printf 'repeat: 1\n'
        printf 'faults:\n  - id: llm.rate_limit\n    times: 1\n    retry_after_s: 0\n'
        printf 'probes:\n  - {id: failure_surfaced, weight: 1}\n  - {id: task_success, weight: 1}\n'
        if [ -n "$extra" ]; then printf '%s\n' "$extra"; fi
        if ! grep -q '^abort:' <<<"$extra"; then printf 'abort:\n  - cost_usd_above: 1\n'; fi
        if ! grep -q '^model:' <<<"$extra"; then printf 'model: {mock: hello.yaml}\n'; fi
    } >"$f"
}

# set_faults FILE YAML: replaces write_exp's one llm.rate_limit fault in FILE by the list items
# YAML (e.g. '  - id: egress.dns_fail\n    match: {host: "*.blocked.test"}', real newlines).
set_faults() {
    python3 - "$1" "$2" <<'PY'
import sys
p, f = sys.argv[1], sys.argv[2]
s = open(p).read()
old = "faults:\n  - id: llm.rate_limit\n    times: 1\n    retry_after_s: 0\n"
if old not in s:
    sys.exit("set_faults: %s has no write_exp fault to replace" % p)
open(p, "w").write(s.replace(old, "faults:\n" + f.rstrip("\n") + "\n"))
PY
}

# commit DIR: commits everything in DIR.
commit() {
    git -C "$1" add -A
    git -C "$1" commit -qm "test" --allow-empty
}

# no_leftovers PROJECT RUN_TMP: no worktree but the project's own (a run adds none), no temporary run
# directory, no process of the runner's children (those naming RUN_TMP or the run folder).
no_leftovers() {
    local proj=$1 dir=$2
    test "$(git -C "$proj" worktree list | wc -l)" = 1 || { git -C "$proj" worktree list; return 1; }
    if ls "$TMP/tmp" 2>/dev/null | grep -q faultline-run; then
        echo "temporary run directories left: $(ls "$TMP/tmp")"; return 1
    fi
    if pgrep -f -- "$dir" >/dev/null; then
        echo "processes left:"; pgrep -af -- "$dir"; return 1
    fi
    if grep -q -- "$TMP" /proc/self/mountinfo; then
        echo "mounts left:"; grep -- "$TMP" /proc/self/mountinfo; return 1
    fi
}
export -f make_project write_exp commit no_leftovers
# The sandbox user (nobody, when the tests run as root) must pass through $TMP to the
# workspaces below it.
chmod 711 "$TMP"
export RUN_AGENT
