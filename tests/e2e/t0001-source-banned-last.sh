#!/usr/bin/env bash
# House style: `#include "util/banned.h"` is the last include of every .c file in src/ and
# tests/unit/ (an include after it could reintroduce a banned function through a macro).
. "$(dirname "$0")/lib.sh"

test_expect "banned.h is the last include of every .c file" '
    bad=0
    for f in "$FAULTLINE_ROOT"/src/*/*.c "$FAULTLINE_ROOT"/tests/unit/test_*.c; do
        last=$(grep -E "^#include" "$f" | tail -n 1)
        if [ "$last" != "#include \"util/banned.h\"" ]; then
            echo "${f#$FAULTLINE_ROOT/}: last include is: $last"; bad=1
        fi
    done
    test "$bad" = 0
'
test_done
