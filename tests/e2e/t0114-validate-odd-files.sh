#!/usr/bin/env bash
# `faultline validate` on odd file names and file types: a name that is not UTF-8 still gives
# one JSON line under --json (bytes replaced by U+FFFD), and a FIFO, a directory or a device
# is refused at once with "is not a regular file" instead of blocking on open or read.
. "$(dirname "$0")/lib.sh"

test_expect "--json with a non-UTF-8 file name prints valid JSON" '
    name=$(printf "bad-\xff\xfe.yaml")
    cp "$EXAMPLES/registry-down.yaml" "$name"
    timeout 10 "$FAULTLINE" validate --json "$name" >out.json
    python3 -c "
import json, sys
lines = open(\"out.json\", encoding=\"utf-8\").read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o[\"file\"] == \"bad-\ufffd\ufffd.yaml\", o[\"file\"]
assert len(o[\"hash\"]) == 64
"
'
test_expect "a FIFO with no writer is refused at once" '
    mkfifo f
    rc=0; timeout 5 "$FAULTLINE" validate f 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "faultline validate: .f. is not a regular file" err.txt
    rc=0; timeout 5 "$FAULTLINE" validate --as-json f 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "is not a regular file" err.txt
'
test_expect "a directory is refused" '
    mkdir d
    rc=0; timeout 5 "$FAULTLINE" validate d 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "faultline validate: .d. is not a regular file" err.txt
'
test_done
