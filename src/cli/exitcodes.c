/*
 * exitcodes: the one table of exit codes, per command (code, name, meaning). docs/cli.md's
 * exit-code table is generated from it by `faultline help --exit-codes` (hidden; an e2e test
 * fails when the page is stale). A command picks its codes from cli.h; a row here says what each
 * means for it.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "util/banned.h"

struct exit_row {
    const char *cmd; /* as shown in the table's first column */
    const char *code;
    const char *name;
    const char *meaning;
};

#define USAGE_ROW(cmd)                                                                                   \
    {                                                                                                    \
        cmd, "64", "usage",                                                                              \
            "an unknown option, a missing or extra argument, a flag value that is not a number, out of " \
            "range or not one of the flag's words"                                                       \
    }

static const struct exit_row rows[] = {
    {"`faultline`", "0", "ok", "`--help`, `--version`, `help [COMMAND]`"},
    {"`faultline`", "1", "failure",
     "a command not linked into this build, or stdout could not be written (`--help`, "
     "`--version`, `help`)"},
    USAGE_ROW("`faultline`"),
    {"`list`", "0", "ok", "printed"},
    {"`list`", "1", "failure", "stdout could not be written"},
    USAGE_ROW("`list`"),
    {"`validate`", "0", "ok", "every file valid"},
    {"`validate`", "1", "failure",
     "some file could not be read (not a regular file, I/O error), a `--json` line could not be "
     "printed, or stdout could not be written; wins over 2"},
    {"`validate`", "2", "invalid", "some file invalid (diagnostics as `FILE:LINE:COL`)"},
    USAGE_ROW("`validate`"),
    {"`schema`", "0", "ok", "printed"},
    {"`schema`", "1", "failure",
     "the schema could not be rendered, or stdout could not be written"},
    USAGE_ROW("`schema`"),
    {"`plan`", "0", "ok", "printed"},
    {"`plan`", "1", "failure", "the experiment cannot be read, or stdout could not be written"},
    {"`plan`", "2", "invalid",
     "an invalid experiment (`FILE:LINE:COL`), `--rep` past the experiment's repetitions"},
    USAGE_ROW("`plan`"),
    {"`mock-model`", "0", "ok",
     "stopped cleanly on SIGTERM/SIGINT; with `--check`, the script "
     "is valid"},
    {"`mock-model`", "1", "failure", "cannot read the script, open the log file, bind or serve"},
    {"`mock-model`", "2", "invalid",
     "an invalid script (`FILE:LINE:COL`), a non-loopback "
     "`--listen`"},
    USAGE_ROW("`mock-model`"),
    {"`agent`", "0", "ok", "the model ended its turn"},
    {"`agent`", "1", "failure",
     "the model API failed (after the allowed retries), an MCP server could not be started, a "
     "hook stopped the agent, interrupted (SIGINT/SIGTERM), cannot open the log file or read the "
     "working directory"},
    {"`agent`", "2", "invalid",
     "an invalid `.claude/settings.json` or `--hook`, a prompt file "
     "that cannot be read, a `--cwd` that cannot be entered"},
    {"`agent`", "3", "max-turns", "`--max-turns` reached"},
    USAGE_ROW("`agent`"),
    {"`mcp`", "0", "ok", "the server exited 0"},
    {"`mcp`", "1", "failure",
     "cannot open the log file, cannot start the server, or the relay "
     "failed"},
    {"`mcp`", "2", "invalid", "an invalid plan or backend setting"},
    USAGE_ROW("`mcp`"),
    {"`mcp`", "other", "server",
     "the server's own exit status; **128 + N** when the shim was stopped by signal N (SIGTERM, "
     "SIGINT, SIGHUP)"},
    {"`proxy`", "0", "ok", "stopped cleanly on SIGTERM/SIGINT (events flushed)"},
    {"`proxy`", "1", "failure",
     "cannot open the log file, read the plan or events file, bind or "
     "serve"},
    {"`proxy`", "2", "invalid", "an invalid plan or `--listen` address"},
    USAGE_ROW("`proxy`"),
    {"`run`", "0", "scored", "verdict `scored`: the report was written"},
    {"`run`", "1", "aborted",
     "verdict `aborted` (an abort condition, an interruption or a runner error stopped the run; "
     "the report was written), or stdout could not be written"},
    {"`run`", "2", "invalid",
     "verdict `invalid` (a baseline failed verify, or no fault fired); the report was written"},
    {"`run`", "3", "experiment",
     "refused: the experiment cannot be read or is invalid (`FILE:LINE:COL`)"},
    {"`run`", "4", "sandbox",
     "refused: the sandbox backend failed its health check (never a fallback to the host)"},
    {"`run`", "5", "project",
     "refused: the experiment is not in a git repository, it has no commit, or its working tree "
     "is not clean (the dirty paths are named)"},
    {"`run`", "6", "model",
     "refused: the `model: {mock: FILE}` script is missing or invalid, or the provider's API key "
     "of a paid model is not set"},
    {"`run`", "7", "report",
     "refused or failed: the report's run folder exists already or cannot be made, the sandbox "
     "cannot reach TMPDIR (as root, a directory above it is not searchable by others), or the "
     "report could not be written"},
    {"`run`", "8", "gate",
     "verdict `scored`, but a CI gate asked for failed: the score under `--min-score`, a probe "
     "under its `--min-pass-rate`, a `--fail-on` class (`FLAKY`: the repetitions' outcome "
     "classes differ), or, with any of these flags, a repetition ending `HARMFUL_ACTION`; the "
     "report was written"},
    USAGE_ROW("`run`"),
    {"`score`", "0", "scored", "verdict `scored`"},
    {"`score`", "1", "aborted",
     "verdict `aborted`, the run folder cannot be read (a required "
     "file missing or malformed), or stdout could not be written"},
    {"`score`", "2", "invalid", "verdict `invalid` (a baseline failed verify, or no fault fired)"},
    USAGE_ROW("`score`"),
    {"`init`", "0", "ok", "both files written"},
    {"`init`", "1", "failure", "a file exists already (nothing is replaced) or cannot be written"},
    {"`init`", "2", "invalid",
     "a fault init writes no experiment for (egress, gate, world), or codex with an MCP fault"},
    USAGE_ROW("`init`"),
    {"`sandbox check`", "0", "ok", "the trial sandbox ran `true`"},
    {"`sandbox check`", "1", "failure", "it did not (the reason on stderr)"},
    {"`sandbox exec`", "N", "COMMAND's", "COMMAND's exit code, 128 + N when killed by signal N"},
    {"`sandbox exec`", "1", "failure", "the sandbox could not be made (the reason on stderr)"},
    USAGE_ROW("`sandbox`"),
    {"`report`", "0", "ok", "the report was written (to `-o FILE` or stdout)"},
    {"`report`", "1", "failure",
     "the input cannot be read, is not a report or a run folder, or the output cannot be "
     "written"},
    USAGE_ROW("`report`"),
    {"`history`", "0", "ok", "the runs were printed (none is not an error)"},
    {"`history`", "1", "failure",
     "the database cannot be opened, migrated or read (corrupt, locked past the busy timeout, "
     "a newer schema), or stdout could not be written"},
    USAGE_ROW("`history`"),
    {"`gate HARNESS`", "0", "answered",
     "the answer is on stdout in the harness's format (allow, deny or held), or there is none: "
     "no opinion"},
    {"`gate HARNESS`", "2", "denied",
     "the hook input could not be read (malformed, cut, over 1 MiB) and its command is "
     "destructive: every harness reads exit 2 as a block, the reason on stderr"},
    {"`gate HARNESS`", "64", "usage", "an unknown harness or option"},
    {"`world`", "0", "ok",
     "the client's input ended (or SIGTERM / SIGINT) and the ledger was written"},
    {"`world`", "1", "failure",
     "the world file or the events file cannot be read, stdout or the ledger cannot be written"},
    {"`world`", "2", "invalid", "an invalid world file (`FILE:LINE:COL`) or plan"},
    {"`world check`", "0", "holds", "every invariant holds (or is not evaluated)"},
    {"`world check`", "1", "failure", "the world file or the ledger cannot be read"},
    {"`world check`", "2", "invalid", "an invalid world file (`FILE:LINE:COL`) or ledger"},
    {"`world check`", "3", "violated",
     "an invariant fails (the earliest violating effect is named)"},
    USAGE_ROW("`world`"),
    {"`gate explain`", "0", "ok", "the decision printed (whatever it is)"},
    {"`gate explain`", "1", "failure",
     "a policy file could not be read (not a regular file, I/O error), or stdout could not be "
     "written"},
    {"`gate explain`", "2", "invalid",
     "an invalid policy file (`FILE:LINE:COL`), an `--input` that is not a JSON object"},
    USAGE_ROW("`gate explain`"),
    {"`connect`", "0", "ok", "every file connected, removed, already so, or its diff printed"},
    {"`connect`", "1", "failure",
     "a settings file or its backup could not be read or written, or stdout could not be "
     "written; wins over 2"},
    {"`connect`", "2", "invalid",
     "a settings file is not JSON (`FILE:LINE:COL`), over 1 MiB, or not shaped as its harness "
     "reads it: that file is left as it was"},
    USAGE_ROW("`connect`"),
    {"`compare`", "0", "ok", "compared, and the regression gate asked for (if any) held"},
    {"`compare`", "1", "failure",
     "an input cannot be read (no such file or folder, a run id not in the history, a database "
     "that cannot be opened), is not JSON (`FILE:LINE:COL`), is not a report or is a report of "
     "another format, or stdout could not be written"},
    {"`compare`", "8", "gate",
     "a budget was exceeded: B's score more than `--max-score-drop` points under A's (or a side "
     "without a score), or B's cost more than `--max-cost-increase` percent over A's; one `gate "
     "failed:` line each on stderr"},
    USAGE_ROW("`compare`"),
    {"`score --against`", "0", "identical",
     "every figure of the regrade equals the stored report's"},
    {"`score --against`", "1", "failure",
     "the run folder or the report cannot be read, the report is not one (or of another format), "
     "or stdout could not be written"},
    {"`score --against`", "3", "drift",
     "a figure differs (scorer drift): one line each, its path, the stored and the regraded value"},
    {"`replay`", "0", "reproduced",
     "every repetition with a ledger rebuilt to the recorded ledger and verdicts (a failing "
     "outcome too), and its files hash to what the run recorded"},
    {"`replay`", "1", "failure",
     "stdout could not be written, or the temporary folder the replayed ledger is checked in "
     "could not be made (`$TMPDIR`); wins over 2 and 3"},
    {"`replay`", "2", "invalid",
     "bad input: run.json, a ledger, a plan or world-hash.json missing, unreadable or malformed, "
     "a run with no world, no repetition (or not `--rep N`) with a ledger; wins over 3"},
    {"`replay`", "3", "differs",
     "a repetition did not reproduce (the first differing call is named) or a file changed "
     "since the run (world, plan, calls or ledger)"},
    USAGE_ROW("`replay`"),
};

void cli_exit_codes_markdown(FILE *f)
{
    fprintf(f, "| command | code | name | meaning |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        fprintf(f, "| %s | %s | %s | %s |\n", rows[i].cmd, rows[i].code, rows[i].name,
                rows[i].meaning);
}

int cli_stdout_status(const char *cmd)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return EXIT_OK;
    fprintf(stderr, "faultline %s: cannot write to stdout\n", cmd);
    return EXIT_FAIL;
}
