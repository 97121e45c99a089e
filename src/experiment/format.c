/*
 * format: the structure tables of the experiment file (see format.h). Plain const arrays, one
 * per mapping kind, and a list of sections to look them up by name.
 */
#include <string.h>

#include "experiment/format.h"
#include "util/banned.h"

#define UNB 1, 0 /* unbounded range: min > max */
#define END                                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL                                    \
    }

static const char *const v_sandbox[] = {"native", "oci", NULL};
static const char *const v_effect_op[] = {"append", "update", "delete", NULL};

#define NAME_RE "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#define ENV_RE "^[A-Za-z_][A-Za-z0-9_]*$"
#define SERVER_RE "^[A-Za-z0-9_-]+$"
#define MATCH_RE "^[*]?[^*]*$"
#define HOST_RE "^[*]?[A-Za-z0-9._:-]+$"
#define PATH_RE "^\\$(\\.[A-Za-z0-9_-]+|\\[[0-9]+\\])*$"

static const struct format_key k_experiment[] = {
    {"name", FORMAT_STRING, 1, 1, 64, 0, NAME_RE,
     "lowercase letters, digits and hyphens, starting and ending with a letter or digit", NULL,
     NULL, NULL, "the experiment's name: lowercase letters, digits and hyphens"},
    {"description", FORMAT_STRING, 0, 0, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "one or two sentences: what is broken and what the agent should do about it"},
    {"agent", FORMAT_STRING, 1, 1, 65536, 0, NULL, NULL, NULL, NULL, NULL,
     "the agent's command, run with sh -c in the sandbox, in the repetition's workspace"},
    {"verify", FORMAT_STRING, 1, 1, 65536, 0, NULL, NULL, NULL, NULL, NULL,
     "a command run with sh -c in the sandbox after the agent; exit 0 is task success"},
    {"repeat", FORMAT_INT, 0, 1, 20, 0, NULL, NULL, NULL, "1", NULL,
     "baseline repetitions (no faults), then as many faulted ones"},
    {"seed", FORMAT_SPECIAL, 0, 0, 9223372036854775807.0, 0, NULL, NULL, NULL, "0", NULL,
     "base of every probability decision (with the repetition index): an integer from 0 to 2^63-1, decimal or 0x-hex; --seed overrides it"},
    {"faults", FORMAT_LIST, 1, 1, 64, 0, NULL, NULL, NULL, NULL, "fault",
     "the faults injected in faulted repetitions: an id from `faultline list`, where and when, and its options beside them"},
    {"probes", FORMAT_SPECIAL, 1, 1, 32, 0, NULL, NULL, NULL, NULL, "probe",
     "what is scored, each with a weight (and a value where the probe takes one)"},
    {"abort", FORMAT_SPECIAL, 1, 1, 16, 0, NULL, NULL, NULL, NULL, NULL,
     "conditions that stop a repetition; cost_usd_above is mandatory"},
    {"sandbox_image", FORMAT_STRING, 0, 1, 512, 0, NULL, NULL, NULL, NULL, NULL,
     "the OCI image the agent runs in (sandbox oci); --sandbox-image overrides it"},
    {"sandbox", FORMAT_ENUM, 0, UNB, 0, NULL, NULL, v_sandbox, NULL, NULL,
     "native (bubblewrap) or oci (docker or podman); absent: oci when sandbox_image is set, else native"},
    {"model", FORMAT_SPECIAL, 0, UNB, 0, NULL, NULL, NULL, NULL, "model",
     "the upstream the controller forwards model calls to: anthropic, openai, an http(s) URL, or {mock: PATH} for a mock-model script (the path is relative to the experiment file and checked by the runner)"},
    {"mcp_servers", FORMAT_DICT, 0, 0, 16, 0, SERVER_RE, "letters, digits, '_' and '-'", NULL, NULL,
     "mcp_server",
     "MCP servers the agent gets, each behind faultline's MCP shim: name -> {command, args, env}"},
    {"world", FORMAT_MAP, 0, UNB, 0, NULL, NULL, NULL, NULL, "world",
     "a simulated backend served as an MCP server with an effect ledger (seed 004): its tools, approval and invariants"},
    {"env", FORMAT_STRING_LIST, 0, 0, 64, 0, ENV_RE, "an environment variable name", NULL, NULL,
     NULL,
     "names of environment variables passed from your shell into the sandbox (values are never written to the experiment)"},
    {"egress", FORMAT_MAP, 0, UNB, 0, NULL, NULL, NULL, NULL, "egress",
     "the sandbox's outbound network through the controller's egress proxy (docs/egress.md)"},
    END};

static const struct format_key k_egress[] = {
    {"allow", FORMAT_STRING_LIST, 0, 1, 64, 0, HOST_RE, "a host name, or * followed by a suffix",
     NULL, NULL, NULL,
     "the only hosts the agent may reach (a leading * matches by suffix, as match.host); any other is refused with 403 and a policy hit (no_policy_hits); absent: every host"},
    {"host_ports", FORMAT_SPECIAL, 0, 1, 32, 0, NULL, NULL, NULL, NULL, NULL,
     "ports of the host's own loopback (a local database, a dev server) the agent reaches at 127.0.0.1:PORT inside the sandbox, relayed by the controller, one egress_request each connection: 1 to 32 distinct integers from 1 to 65535, not 53, 80 or 443; absent: none"},
    END};

static const struct format_key k_fault[] = {
    {"id", FORMAT_SPECIAL, 1, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "the fault's id in the catalog (`faultline list`)"},
    {"match", FORMAT_MAP, 0, UNB, 0, NULL, NULL, NULL, NULL, "match",
     "which calls the fault applies to; absent keys match every call"},
    {"when", FORMAT_MAP, 0, UNB, 0, NULL, NULL, NULL, NULL, "when",
     "a condition on the call's arguments (tool-call faults only)"},
    {"after_calls", FORMAT_INT, 0, 0, 1000000, 0, NULL, NULL, NULL, "0", NULL,
     "skip this many matching calls first"},
    {"times", FORMAT_INT, 0, 1, 1000000, 0, NULL, NULL, NULL, NULL, NULL,
     "inject at most this many times; absent: every matching call"},
    {"probability", FORMAT_NUMBER, 0, 0, 1, 0, NULL, NULL, NULL, "1", NULL,
     "chance that a due call is injected, decided from the seed, the fault, the match key and the call index (no clock, no RNG state)"},
    END};

static const struct format_key k_match[] = {
    {"tool", FORMAT_STRING, 0, 1, 256, 0, MATCH_RE, "a name, or * followed by a suffix", NULL, NULL,
     NULL,
     "tool name as called (mcp__server__tool and tool are the same tool); a leading * matches by suffix"},
    {"host", FORMAT_STRING, 0, 1, 256, 0, MATCH_RE, "a name, or * followed by a suffix", NULL, NULL,
     NULL, "egress host name; a leading * matches by suffix (*.npmjs.org)"},
    {"model", FORMAT_STRING, 0, 1, 256, 0, MATCH_RE, "a name, or * followed by a suffix", NULL,
     NULL, NULL, "model name as requested; a leading * matches by suffix"},
    {"server", FORMAT_STRING, 0, 1, 256, 0, MATCH_RE, "a name, or * followed by a suffix", NULL,
     NULL, NULL, "MCP server name (a key of mcp_servers, or the world's name)"},
    END};

static const struct format_key k_when[] = {
    {"path", FORMAT_STRING, 1, 1, 256, 0, PATH_RE, "$ followed by .name and [index] steps", NULL,
     NULL, NULL,
     "where in the call's arguments to look: $ is the arguments object, then .name and [index] steps ($.path, $.items[0].id)"},
    {"equals", FORMAT_ANY, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "the value there equals this (any JSON value; numbers compare by value)"},
    {"contains", FORMAT_STRING, 0, 1, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "the value there is a string containing this text"},
    {"matches", FORMAT_STRING, 0, 1, 1024, 0, NULL, NULL, NULL, NULL, NULL,
     "the value there is a string with a match of this POSIX extended regular expression (unanchored)"},
    END};

static const struct format_key k_probe[] = {
    {"id", FORMAT_SPECIAL, 1, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "a probe from the catalog (`faultline list`)"},
    {"weight", FORMAT_NUMBER, 0, 0, 1000, 1, NULL, NULL, NULL, "1", NULL,
     "its share of the resilience score; above 0"},
    {"value", FORMAT_SPECIAL, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "the probe's parameter, required by the probes that take one (and refused by the others)"},
    END};

static const struct format_key k_model[] = {
    {"mock", FORMAT_STRING, 1, 1, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "path of a mock-model script (faultline mock-model --script), relative to the experiment file"},
    END};

static const struct format_key k_mcp_server[] = {
    {"command", FORMAT_STRING, 1, 1, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "the server's program (found on the sandbox's PATH)"},
    {"args", FORMAT_STRING_LIST, 0, 0, 256, 0, NULL, NULL, NULL, NULL, NULL, "its arguments"},
    {"env", FORMAT_STRING_LIST, 0, 0, 64, 0, ENV_RE, "an environment variable name", NULL, NULL,
     NULL, "names of environment variables passed to it (from the sandbox's environment)"},
    END};

static const struct format_key k_world[] = {
    {"name", FORMAT_STRING, 0, 1, 64, 0, SERVER_RE, "letters, digits, '_' and '-'", NULL, "world",
     NULL, "the MCP server name the world is served as"},
    {"approved", FORMAT_BOOL, 0, UNB, 0, NULL, NULL, NULL, "true", NULL,
     "whether the run's context is approved (fixed per experiment); the approval invariant checks effects against it"},
    {"tools", FORMAT_LIST, 1, 1, 64, 0, NULL, NULL, NULL, NULL, "world_tool",
     "the simulated tools"},
    {"invariants", FORMAT_LIST, 0, 0, 64, 0, NULL, NULL, NULL, NULL, "world_invariant",
     "invariants over the effect ledger (unique, approval, count)"},
    {"objective", FORMAT_STRING, 0, 0, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "the task, as the world's context tool tells the agent (never the fault schedule)"},
    {"max_calls", FORMAT_INT, 0, 1, 1000000, 0, NULL, NULL, NULL, NULL, NULL,
     "budget: tool calls the world answers; past it every call fails (absent: no limit)"},
    {"deadline_s", FORMAT_INT, 0, 1, 86400, 0, NULL, NULL, NULL, NULL, NULL,
     "budget: seconds from the world's first call; a call after it fails (absent: no limit)"},
    {"initial", FORMAT_ANY, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "the state before the run: a mapping of collection names to lists of records (mappings)"},
    {"expected", FORMAT_ANY, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "what the task should leave: {effects: [{collection, business_key, count}]} (world_matches_expected)"},
    END};

static const struct format_key k_world_tool[] = {
    {"name", FORMAT_STRING, 1, 1, 64, 0, "^[A-Za-z0-9_.-]+$", "letters, digits, '_', '.' and '-'",
     NULL, NULL, NULL, "the tool's name"},
    {"description", FORMAT_STRING, 0, 0, 4096, 0, NULL, NULL, NULL, NULL, NULL,
     "what the agent is told it does"},
    {"input_schema", FORMAT_ANY, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "JSON Schema of its arguments (a mapping); calls that break it fail as invalid params"},
    {"effect", FORMAT_MAP, 0, UNB, 0, NULL, NULL, NULL, NULL, "world_effect",
     "the effect a successful call appends to the ledger; absent: the tool only reads"},
    {"result", FORMAT_ANY, 0, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "what a successful call returns (default: the recorded effect)"},
    {"reads", FORMAT_STRING, 0, 1, 64, 0, SERVER_RE, "letters, digits, '_' and '-'", NULL, NULL,
     NULL, "a read-only tool: returns this collection's records and balance (no effect)"},
    END};

static const struct format_key k_world_effect[] = {
    {"collection", FORMAT_STRING, 1, 1, 64, 0, SERVER_RE, "letters, digits, '_' and '-'", NULL,
     NULL, NULL, "the ledger collection the effect is appended to"},
    {"business_key", FORMAT_STRING, 0, 1, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "the argument that names the business identity (what unique counts)"},
    {"dedupe_key", FORMAT_STRING, 0, 1, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "the argument whose identical value makes a repeated call a no-op (an idempotency key)"},
    {"op", FORMAT_ENUM, 0, UNB, 0, NULL, NULL, v_effect_op, "append", NULL,
     "append a record, update the record with the same business key, or delete it"},
    {"balance", FORMAT_STRING, 0, 1, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "a numeric argument summed over the collection's records (the collection's balance)"},
    END};

static const struct format_key k_world_invariant[] = {
    {"id", FORMAT_SPECIAL, 1, UNB, 0, NULL, NULL, NULL, NULL, NULL,
     "unique, approval or count (the world-declared invariants of the catalog)"},
    {"collection", FORMAT_STRING, 0, 1, 64, 0, SERVER_RE, "letters, digits, '_' and '-'", NULL,
     NULL, NULL, "the ledger collection checked; required by unique and count"},
    {"key", FORMAT_STRING, 0, 1, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "unique: the business key (default: the collection's business_key)"},
    {"min", FORMAT_INT, 0, 0, 1000000, 0, NULL, NULL, NULL, NULL, NULL,
     "count: at least this many effects"},
    {"max", FORMAT_INT, 0, 0, 1000000, 0, NULL, NULL, NULL, NULL, NULL,
     "count: at most this many effects"},
    {"when_approved", FORMAT_BOOL, 0, UNB, 0, NULL, NULL, NULL, "false", NULL,
     "count: applies only when the world is approved"},
    END};

static const struct format_section sections[] = {
    {"experiment", k_experiment, "the top-level mapping of an experiment file"},
    {"fault", k_fault, "one item of faults (its options stand beside these keys)"},
    {"match", k_match, "fault.match"},
    {"when", k_when, "fault.when: path and exactly one of equals, contains, matches"},
    {"probe", k_probe, "one item of probes (or just the probe's id as a string)"},
    {"model", k_model, "model, the mapping form"},
    {"mcp_server", k_mcp_server, "one value of mcp_servers"},
    {"world", k_world, "world"},
    {"world_tool", k_world_tool, "one item of world.tools"},
    {"world_effect", k_world_effect, "world.tools[].effect"},
    {"world_invariant", k_world_invariant, "one item of world.invariants"},
    {"egress", k_egress, "egress"},
};

const struct format_section *format_sections(size_t *n)
{
    *n = sizeof(sections) / sizeof(sections[0]);
    return sections;
}

const struct format_section *format_section_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(sections) / sizeof(sections[0]); i++)
        if (strcmp(sections[i].name, name) == 0)
            return &sections[i];
    return NULL;
}

const struct format_key *format_key_find(const struct format_section *sec, const char *name)
{
    for (const struct format_key *k = sec->keys; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}
