#!/usr/bin/env bash
# Golden bad (and borderline) inputs for `faultline validate`: for each tests/data/validate/NAME.yaml
# the expected diagnostics and exit code are in NAME.expected (the output of
# `faultline validate --quiet NAME.yaml`, stdout and stderr, then a line "exit N"). A new case is
# two new files. UPDATE_GOLDEN=1 rewrites the .expected files (review the diff before committing).
. "$(dirname "$0")/lib.sh"
DATA="$FAULTLINE_ROOT/tests/data/validate"

for input in "$DATA"/*.yaml; do
    name=$(basename "$input" .yaml)
    if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
        (cd "$DATA" && { timeout 10 "$FAULTLINE" validate --quiet "$name.yaml" 2>&1; echo "exit $?"; } >"$name.expected")
    fi
    test_expect "validate $name.yaml gives its golden diagnostics and exit code" "
        test -f '$DATA/$name.expected'
        cd '$DATA'
        rc=0
        timeout 10 '$FAULTLINE' validate --quiet '$name.yaml' >'$TMP/$name.out' 2>&1 || rc=\$?
        echo \"exit \$rc\" >>'$TMP/$name.out'
        diff -u '$name.expected' '$TMP/$name.out'
    "
done

test_expect "every .expected file has its input" '
    for e in "'"$DATA"'"/*.expected; do test -f "${e%.expected}.yaml"; done
'
test_done
