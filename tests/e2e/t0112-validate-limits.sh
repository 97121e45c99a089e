#!/usr/bin/env bash
# Hostile input never crashes or hangs `faultline validate`: each run has a short timeout and must
# end with exit 2 and a FILE:LINE:COL error (a crash would exit >= 128, a hang 124).
. "$(dirname "$0")/lib.sh"

expect_invalid() { # FILE PATTERN
    local rc=0
    timeout 10 "$FAULTLINE" validate "$1" >out.txt 2>err.txt || rc=$?
    [ "$rc" = 2 ] || { echo "exit $rc for $1"; cat err.txt; return 1; }
    grep -Eq "^$1:[0-9]+:[0-9]+: error: $2" err.txt || { cat err.txt; return 1; }
}
export -f expect_invalid

test_expect "a 10 MB file gets one clear error" '
    head -c 10485760 /dev/zero | tr "\0" "a" >big.yaml
    expect_invalid big.yaml "the file is over the limit of 1048576 bytes"
'
test_expect "an endless device is refused as not a regular file" '
    rc=0; timeout 10 "$FAULTLINE" validate /dev/zero 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "/dev/zero. is not a regular file" err.txt
'
test_expect "random binary input" '
    head -c 65536 /dev/urandom >bin.yaml
    expect_invalid bin.yaml "."
'
test_expect "1 MiB of nesting" '
    python3 -c "import sys; sys.stdout.write(\"[\" * 1048000)" >deep.yaml
    expect_invalid deep.yaml "nesting deeper than 64 levels"
'
test_expect "a billion-laughs alias bomb" '
    { echo "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]"
      prev=a
      for n in b c d e f g h i j k l m n o p; do
          printf "%s: &%s [" $n $n; for i in 1 2 3 4 5 6 7 8 9; do printf "*%s," $prev; done; printf "*%s]\n" $prev
          prev=$n
      done; } >bomb.yaml
    expect_invalid bomb.yaml "expanding alias .* \\(an alias bomb\\?\\)"
'
test_expect "one long string aliased 45000 times hits the alias byte budget" '
    python3 -c "
import sys
sys.stdout.write(\"a: &a \\\"\" + \"x\" * 700000 + \"\\\"\\nb:\\n\" + \" - *a\\n\" * 45000)" >abytes.yaml
    expect_invalid abytes.yaml "expanding alias .\\*a.: aliases expand to more than [0-9]+ bytes"
'
test_expect "a long flat mapping hits the node limit" '
    python3 -c "
for i in range(60000): print(\"k%d: v\" % i)" >flat.yaml
    expect_invalid flat.yaml "more than 50000 YAML nodes"
'
test_expect "a UTF-16 file with a BOM is read, not rejected as binary" '
    printf "name: x\n" | iconv -f UTF-8 -t UTF-16 >u16.yaml
    expect_invalid u16.yaml "missing required key .agent."
'
test_done
