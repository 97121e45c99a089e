#!/usr/bin/env bash
# House style (docs/architecture.md, issue 10): a fallible function returns 0 or an ERR_* code
# of util/err.h, never a bare -1 that reads as ERR_NOMEM; a -1 that is a value (an index, an
# exit status, "more input needed") has a name saying it is not an error code. Checked in
# every .c and .h file below src/ (a comparator returns (a > b) - (a < b)).
. "$(dirname "$0")/lib.sh"

dirs="src"
export dirs

test_expect "no 'return -1' and no '? -1 :' in $dirs" '
    cd "$FAULTLINE_ROOT"
    if grep -nE "return[[:space:]]*\(?-1\)?[[:space:]]*;|\?[[:space:]]*-1[[:space:]]*:" \
        $(find $dirs -name "*.[ch]" | sort); then
        exit 1
    fi
'
test_done
