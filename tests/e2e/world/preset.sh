# tests/e2e/world/preset.sh: sourced (after lib.sh) by the tests of the world presets. Copies
# examples/worlds/PRESET.yaml and its two scripts into a fresh git project, writes PRESET-naive.yaml
# (the experiment with its careful script replaced by the naive one), and runs both through
# `faultline run`: careful.json / careful/ and naive.json / naive/ in $TMP, their exit codes in
# careful.rc and naive.rc.
preset_run() {
    local preset=$1 f exp rc
    chmod 711 "$TMP" # the sandbox runs as nobody when this runs as root: it must reach its home
    export TMPDIR="$TMP/tmp"
    mkdir -p "$TMPDIR" "$TMP/p"
    cp "$EXAMPLES/worlds/$preset.yaml" "$EXAMPLES/worlds/$preset-careful.yaml" \
        "$EXAMPLES/worlds/$preset-naive.yaml" "$TMP/p/"
    sed "s/^model: {mock: $preset-careful.yaml}\$/model: {mock: $preset-naive.yaml}/" \
        "$TMP/p/$preset.yaml" >"$TMP/p/$preset-naive-exp.yaml"
    grep -q "^model: {mock: $preset-naive.yaml}\$" "$TMP/p/$preset-naive-exp.yaml" || return 1
    git -C "$TMP/p" init -q
    git -C "$TMP/p" add -A
    git -C "$TMP/p" -c user.name=t -c user.email=t@example.invalid commit -qm t
    for f in careful naive; do
        exp=$preset.yaml
        if [ $f = naive ]; then exp=$preset-naive-exp.yaml; fi
        rc=0
        (cd "$TMP" && timeout 120 "$FAULTLINE" run "p/$exp" --out "$TMP/$f.json" \
            >"$TMP/$f.out" 2>"$TMP/$f.err") || rc=$?
        echo "$rc" >"$TMP/$f.rc"
    done
}
