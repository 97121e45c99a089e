#!/usr/bin/env bash
# House style (docs/architecture.md, issue 10): a fallible function returns 0 or an ERR_* code
# of util/err.h, never a bare -1 that reads as ERR_NOMEM; a -1 that is a value (an index, an
# exit status, "more input needed") has a name saying it is not an error code. Checked in the
# directories that have been converted; a directory joins the list once it is clean.
. "$(dirname "$0")/lib.sh"

dirs="src/codec src/agent src/model src/experiment src/util src/events/view.c"
export dirs

test_expect "no 'return -1' and no '? -1 :' in $dirs" '
    cd "$FAULTLINE_ROOT"
    if grep -nE "return[[:space:]]*\(?-1\)?[[:space:]]*;|\?[[:space:]]*-1[[:space:]]*:" \
        $(for d in $dirs; do if [ -d "$d" ]; then ls "$d"/*.c "$d"/*.h; else echo "$d"; fi; done); then
        exit 1
    fi
'
test_done
