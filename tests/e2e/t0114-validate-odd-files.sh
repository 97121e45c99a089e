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
test_done
