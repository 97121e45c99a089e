#!/usr/bin/env bash
# The project's docs stand alone (issue 10): every relative link in docs/ and README.md names a
# file of the repository, inside it; no doc points at a path of the machine it was written on
# or at a design file users do not have; and while `faultline gate` and `faultline world` are
# not commands of this build, every paragraph that names them says they do not exist yet.
. "$(dirname "$0")/lib.sh"

test_expect "every relative link of docs/*.md and README.md is a file of the repository" '
    cd "$FAULTLINE_ROOT"
    bad=0
    for f in README.md docs/*.md; do
        for t in $(grep -oE "\]\([^)#[:space:]]+" "$f" | sed "s/^](//"); do
            case "$t" in http://* | https://* | mailto:*) continue ;; esac
            p=$(realpath -m "$(dirname "$f")/$t")
            case "$p" in "$(realpath "$FAULTLINE_ROOT")"/*) ;; *) echo "$f: $t leaves the repository"; bad=1; continue ;; esac
            test -e "$p" || { echo "$f: $t does not exist"; bad=1; }
        done
    done
    test $bad = 0
'

test_expect "no doc names a path outside the repository or a design file users do not have" '
    cd "$FAULTLINE_ROOT"
    if grep -nE "(^|[[:space:](\`])/work/|\.\./shared|DESIGN\.md|seeds/" README.md docs/*.md; then
        exit 1
    fi
'

test_expect "a paragraph naming faultline gate or world, while they are not commands, says they do not exist yet" '
    "$FAULTLINE" --help >help.txt
    help=$PWD/help.txt
    cd "$FAULTLINE_ROOT"
    for c in gate world; do
        if grep -qE "^  $c " "$help"; then continue; fi
        # paragraphs (blank-line separated) naming the command without saying it is not there
        awk -v RS= -v c="faultline $c" "{ gsub(/[[:space:]]+/, \" \") } index(\$0, c) && \$0 !~ /(do|does) not exist yet|to come|not built yet/ { print FILENAME \": \" substr(\$0, 1, 200); bad = 1 } END { exit bad }" \
            README.md docs/*.md
    done
'
test_done
