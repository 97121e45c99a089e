#!/usr/bin/env bash
# bench/b12-run.sh: what `faultline run` costs per repetition beyond the agent, side by side
# with the sandboxes it is built on, in one run.
#
#   overhead   faultline run of an experiment whose agent and verify are `true` against the mock
#              model, REPS repetitions (REPS/2 baselines, REPS/2 faulted): wall time per
#              repetition. Against a bare `bwrap ... true` with the native backend's flags (the
#              reference that costs nearly nothing) and one `podman run ... true`, measured in
#              the same run. Target: at most 50 ms per repetition beyond the bare bwrap, and at
#              least 6x less than one podman run.
#   jobs       20 repetitions of a 1 s agent (`sleep 1`) with --jobs 2 against --jobs 1:
#              target at most 0.6x the --jobs 1 time. (Only when faultline run has --jobs.)
#
# Rounds alternate (ROUNDS, default 3; the median is reported). Prints each figure, its
# reference, the ratio and met / NOT MET, with the load average before and after. Figures go to
# docs/performance.md (## runner).
set -u
: "${FAULTLINE:?run through make bench (bench/run sets FAULTLINE)}"
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-20}
T=$(mktemp -d "${TMPDIR:-/tmp}/faultline-bench-run.XXXXXX")
chmod 711 "$T"
notmet=()
cleanup() { rm -rf "$T"; }
trap cleanup EXIT
now_ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
verdict() { # NAME FIGURE OP BOUND: sets V to met / NOT MET (and records the name)
    if awk -v f="$2" -v b="$4" -v op="$3" 'BEGIN {exit !((op == "<=") ? f <= b : f >= b)}'; then
        V="met"
    else
        V="NOT MET"
        notmet+=("$1")
    fi
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# A project: a git repository whose experiment runs `true` (or `sleep 1`) against the mock model.
proj() { # DIR AGENT REPEAT
    mkdir -p "$1"
    cat >"$1/mock.yaml" <<'YAML'
name: bench
rules: []
fallback: {text: "done"}
YAML
    cat >"$1/exp.yaml" <<YAML
name: bench-run
agent: $2
verify: "true"
repeat: $3
model: {mock: mock.yaml}
faults:
  - {id: llm.rate_limit, match: {model: "*"}}
probes:
  - {id: task_success, weight: 1}
abort:
  - cost_usd_above: 1
YAML
    git -C "$1" init -q
    git -C "$1" add -A
    git -C "$1" -c user.name=bench -c user.email=bench@localhost commit -qm bench
}
proj "$T/p1" '"true"' $((REPS / 2))

mkdir -p "$T/bw/work" "$T/bw/home"
bare_bwrap() {
    bwrap --unshare-all --share-net --die-with-parent --new-session --cap-drop ALL \
        --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
        --ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp --bind "$T/bw/home" /home/agent \
        --bind "$T/bw/work" /work --remount-ro / --chdir /work /bin/sh -c true
}

run_ms=() bw_ms=() pm_ms=()
for r in $(seq "$ROUNDS"); do
    t0=$(now_ms)
    (cd "$T/p1" && "$FAULTLINE" run exp.yaml --quiet --out "$T/r$r.json" >/dev/null 2>"$T/run$r.err")
    rc=$?
    t1=$(now_ms)
    # (the agent never calls the model, so the fault never fires: verdict invalid, by design)
    if [ "$(jq '[.repetitions[] | select(.status == "complete")] | length' "$T/r$r.json" 2>/dev/null)" != "$REPS" ]; then
        echo "b12-run: not every repetition completed (exit $rc): nothing to measure"
        tail -5 "$T/run$r.err"; exit 1
    fi
    run_ms+=($(( (t1 - t0) )))
    t0=$(now_ms)
    for _ in $(seq "$REPS"); do bare_bwrap; done
    t1=$(now_ms)
    bw_ms+=($(( (t1 - t0) )))
    if command -v podman >/dev/null; then
        "$FAULTLINE" sandbox check --sandbox oci >/dev/null 2>&1 # the default image exists
        t0=$(now_ms)
        for _ in 1 2 3; do
            podman run --rm --network none --cap-drop ALL --user 65534:65534 \
                --ulimit nproc=512:512 --ulimit nofile=4096:4096 -v /usr:/usr:ro -v /etc:/etc:ro \
                --read-only localhost/faultline-sandbox:1 /bin/sh -c true >/dev/null 2>&1
        done
        t1=$(now_ms)
        pm_ms+=($(( (t1 - t0) / 3 )))
    fi
done
per_rep=$(printf '%s\n' "${run_ms[@]}" | median | awk -v n="$REPS" '{printf "%.1f", $1 / n}')
bw_rep=$(printf '%s\n' "${bw_ms[@]}" | median | awk -v n="$REPS" '{printf "%.1f", $1 / n}')
over=$(awk -v a="$per_rep" -v b="$bw_rep" 'BEGIN {printf "%.1f", a - b}')
verdict overhead "$over" "<=" 50
echo "faultline run, agent true: ${per_rep} ms per repetition; bare bwrap true: ${bw_rep} ms;" \
    "overhead ${over} ms (target <= 50 ms): $V"
if [ "${#pm_ms[@]}" -gt 0 ]; then
    pm=$(printf '%s\n' "${pm_ms[@]}" | median)
    ratio=$(awk -v p="$pm" -v o="$over" 'BEGIN {printf "%.1f", (o > 0) ? p / o : 999}')
    verdict podman-ratio "$ratio" ">=" 6
    echo "podman run true: ${pm} ms; podman / faultline overhead = ${ratio}x (target >= 6x): $V"
fi

if "$FAULTLINE" help run 2>&1 | grep -q -- "--jobs"; then
    proj "$T/p2" '"sleep 1"' 10
    t0=$(now_ms)
    (cd "$T/p2" && "$FAULTLINE" run exp.yaml --quiet --jobs 1 --out "$T/j1.json" >/dev/null 2>&1)
    t1=$(now_ms)
    (cd "$T/p2" && "$FAULTLINE" run exp.yaml --quiet --jobs 2 --out "$T/j2.json" >/dev/null 2>&1)
    t2=$(now_ms)
    for j in j1 j2; do
        if [ "$(jq '[.repetitions[] | select(.status == "complete")] | length' "$T/$j.json" 2>/dev/null)" != 20 ]; then
            echo "b12-run: the --jobs run ($j) did not score: nothing to measure"; exit 1
        fi
    done
    j1=$((t1 - t0)) j2=$((t2 - t1))
    jr=$(awk -v a="$j2" -v b="$j1" 'BEGIN {printf "%.2f", a / b}')
    verdict jobs "$jr" "<=" 0.6
    echo "20 repetitions of sleep 1: --jobs 1 ${j1} ms, --jobs 2 ${j2} ms, ratio ${jr}" \
        "(target <= 0.6): $V"
else
    echo "--jobs: faultline run has no --jobs: NOT MET"
    notmet+=(jobs)
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${#notmet[@]}" -gt 0 ]; then
    echo "targets NOT MET: ${notmet[*]}"
fi
exit 0
