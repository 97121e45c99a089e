#!/usr/bin/env bash
# t0700-agent-shell: `faultline agent --shell` against `faultline mock-model` with the
# resilient fixture, over the Anthropic, OpenAI chat and Responses APIs, streamed and not:
# the model asks for `echo hi > f.txt`, the file appears, the steps and the final answer are
# printed; a failing command comes back to the model as an error with its exit code.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$EXAMPLES/models/resilient.yaml"

for api in anthropic openai responses; do
    for mode in stream no-stream; do
        flag=; [ $mode = no-stream ] && flag=--no-stream
        test_expect "$api ($mode): the shell command runs, the final answer is printed" "
            mkdir w-$api-$mode && cd w-$api-$mode
            agent $api \"\$M_URL\" --shell $flag --prompt 'Please run \`echo hi > f.txt\`' >out 2>err
            cat out
            test \"\$(cat f.txt)\" = hi
            grep -qx '\[tool\] shell {\"command\":\"echo hi > f.txt\"}' out
            grep -qx '\[result\] shell ok: (no output)' out
            test \"\$(tail -n 1 out)\" = 'Done: the command succeeded. Output: (no output)'
            grep -q 'done after 2 turns' err
        "
    done
done

for api in anthropic openai responses; do
    test_expect "$api: a failing command is an error result and the model reports it" "
        mkdir f-$api && cd f-$api
        agent $api \"\$M_URL\" --shell --prompt 'Please run \`ls /no/such/dir-E-FAULTLINE-12345678\`' >out 2>err
        cat out
        grep -q '^\[result\] shell error: ls: cannot access .* Exit code 2\$' out
        grep -q '^The task FAILED' out
        grep -q 'E-FAULTLINE-12345678' out
    "
done

test_expect "--quiet prints only the final answer" '
    mkdir q && cd q
    agent anthropic "$M_URL" --shell --quiet --prompt "Please run \`echo quiet\`" >out 2>err
    test "$(cat out)" = "Done: the command succeeded. Output: quiet"
'

test_expect "the working directory is --cwd and the shell runs there" '
    mkdir -p c/sub
    agent anthropic "$M_URL" --shell --cwd c/sub --prompt "Please run \`pwd\`" >out 2>err
    grep -q "Output: .*/c/sub$" out
'

test_expect "without --shell no tool is offered and the model has nothing to do" '
    agent anthropic "$M_URL" --prompt "Please run \`echo hi > nope.txt\`" >out 2>err
    test ! -e nope.txt
    grep -q ", 0 tools" out
    test "$(tail -n 1 out)" = "I have nothing to do here."
'

test_expect "usage errors exit 64" '
    set +e
    "$FAULTLINE" agent >/dev/null 2>&1; a=$?
    "$FAULTLINE" agent --prompt x --api nope >/dev/null 2>&1; b=$?
    "$FAULTLINE" agent --prompt x --mcp "bad name=cmd" >/dev/null 2>&1; c=$?
    "$FAULTLINE" agent --prompt x --max-turns 0 >/dev/null 2>&1; d=$?
    set -e
    test "$a$b$c$d" = 64646464
'

test_expect "the API key is never printed" '
    mkdir k && cd k
    ANTHROPIC_API_KEY=sk-secret-key-1234 agent anthropic "$M_URL" --shell --prompt "Please run \`echo hi\`" >out 2>err
    refute grep -q sk-secret-key-1234 out err
'
test_done
