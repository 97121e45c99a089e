/*
 * evkind: the table of event kinds, its lookups, the validator and the Markdown of
 * docs/events.md's generated regions (see kinds.h).
 *
 * How: one static array of rows, each pointing at a static array of fields; lookups are linear
 * walks (some twenty rows). The content is the contract of docs/events.md: change a kind here,
 * then regenerate the page (`faultline list --markdown-events docs/events.md`). A kind no
 * component writes yet has src == 0 and its writers-to-be in src_later; the page says "not
 * written yet" for it, and for a field marked planned.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "events/events.h"
#include "events/kinds.h"
#include "util/text.h"
#include "util/banned.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define S EVKIND_T_STRING
#define I EVKIND_T_INTEGER
#define NUM EVKIND_T_NUMBER
#define B EVKIND_T_BOOLEAN
#define O EVKIND_T_OBJECT
#define A EVKIND_T_ARRAY
#define NUL EVKIND_T_NULL
#define ANY EVKIND_T_ANY

/* The `src` values, in the order of their first EVKIND_SRC_* bit (the common field's values). */
static const char *const srcs[] = {"controller", "mcp", "gate", "world", "runner", "agent", NULL};

/* Every EVKIND_SRC_* bit in order: its component name and the `src` value it writes. */
static const struct {
    unsigned bit;
    const char *component;
    const char *src;
} comps[] = {
    {EVKIND_SRC_CONTROLLER_MODEL, "controller-model", "controller"},
    {EVKIND_SRC_CONTROLLER_EGRESS, "controller-egress", "controller"},
    {EVKIND_SRC_MCP, "mcp", "mcp"},
    {EVKIND_SRC_GATE, "gate", "gate"},
    {EVKIND_SRC_WORLD, "world", "world"},
    {EVKIND_SRC_RUNNER, "runner", "runner"},
    {EVKIND_SRC_AGENT, "agent", "agent"},
};
#define NCOMPS (sizeof(comps) / sizeof(comps[0]))

static const char *const v_via[] = {"control_api", NULL};
static const char *const v_egress_mode[] = {"transparent", "host_port", NULL};
static const char *const v_component[] = {
    "controller-model", "controller-egress", "mcp", "gate", "world", NULL};
static const char *const v_end_reason[] = {"end", "error", NULL};
static const char *const v_api[] = {"anthropic-messages", "openai-chat", "openai-responses", NULL};
static const char *const v_harness[] = {"claude-code", "codex", "cursor", "sdk", "agent", NULL};
static const char *const v_decision[] = {"allow", "deny", "ask", "held", NULL};
static const char *const v_tier[] = {"destructive", "rule", "default", NULL};
static const char *const v_mode[] = {"enforce", "observe", "monitor", NULL};
static const char *const v_abort[] = {"destructive_attempt", "cost_usd_above", "wall_clock_s_above",
                                      "runner_error",        "interrupted",    NULL};
static const char *const v_outcome[] = {"completed", "aborted", "error", NULL};
static const char *const v_sandbox[] = {"netns", "declared", "none", NULL};
static const char *const v_direction[] = {"client_to_server", "server_to_client", "none", NULL};

static const struct evkind_field common[] = {
    {"t", I, 0, 1,
     "milliseconds since the Unix epoch, when the thing happened (`t_us` / 1000 when `t_us` is "
     "set)",
     NULL, 0},
    {"t_us", I, 0, 0,
     "microseconds since the Unix epoch, when the thing happened, taken by the component that saw "
     "it (not when the line was written or posted); readers order events by it, ties by `seq`; "
     "absent in files of older writers (then `t` * 1000 stands for it)",
     NULL, 0},
    {"seq", I, 0, 1,
     "position in this file's order, assigned by the writer; increases through the file", NULL, 0},
    {"run", S, 0, 1, "the repetition's run id (plan `run`)", NULL, 0},
    {"src", S, 0, 1, "who observed it", srcs, 0},
    {"kind", S, 0, 1, "one of the kinds below", NULL, 0},
    {"via", S, 0, 0,
     "set on every event posted to the controller's `POST /_faultline/events` (docs/control-api.md): "
     "a claim of a component inside the sandbox, not something the controller observed; absent on "
     "events a writer produced itself",
     v_via, 0},
};

static const struct evkind_field f_plan_loaded[] = {
    {"component", S, 0, 1,
     "injector name: each injecting side reports for itself (the controller writes one per side "
     "it serves: `controller-model`, and `controller-egress` when it serves the egress proxy)",
     v_component, 0},
    {"plan", S, 0, 1, "the plan file's path", NULL, 0},
    {"faulted", B, 0, 1, "plan `faulted`", NULL, 0},
    {"faults", I, 0, 1, "number of faults in the plan", NULL, 0},
    {"injectors", A, S, 1, "union of the faults' injectors", NULL, 0},
    {"canary", S, 0, 0, "plan canary", NULL, 0},
    {"experiment", S, 0, 0, "experiment hash, when the plan has one", NULL, 0},
    {"listen", S, 0, 0, "for the controller: the address it listens on", NULL, 0},
    {"pid", I, 0, 0,
     "the component's process id (inside the sandbox: in its PID namespace); a later "
     "`component_end` names the same",
     NULL, 0},
    {"sandbox", S, 0, 0,
     "for the controller: how it knows the agent is sandboxed (`netns`: its listener is in "
     "another network namespace; `declared`: `--i-have-a-sandbox`; `none`: it refuses mutating "
     "faults)",
     v_sandbox, 0},
    {"egress_allow", I, 0, 0,
     "for `controller-egress`: the number of host patterns on the experiment's `egress.allow` "
     "(absent: every host allowed); with it, `no_policy_hits` is evaluated",
     NULL, 0},
};

static const struct evkind_field f_model_request[] = {
    {"id", S, 0, 1, "request id, unique within the run; the matching `model_response` repeats it",
     NULL, 0},
    {"api", S, 0, 1, "the API, from the request path", v_api, 0},
    {"model", S, 0, 1, "model requested (empty when the body could not be read)", NULL, 0},
    {"stream", B, 0, 1, "SSE requested", NULL, 0},
    {"path", S, 0, 1, "request path, e.g. `/v1/messages`", NULL, 0},
    {"messages", I, 0, 1, "number of input messages (or input items)", NULL, 0},
    {"tools", I, 0, 1, "number of tools offered", NULL, 0},
    {"malformed", B, 0, 0,
     "true when the body is not valid JSON (it is forwarded as is, with a `warning` "
     "`malformed_request`)",
     NULL, 0},
    {"unread", B, 0, 0,
     "true when the body was too large to read on the controller's loop (over 4 MiB, and the "
     "fast scan could not take it): `model`, `stream`, `messages` and `tools` are then unknown "
     "(empty, false, 0); it is forwarded as is",
     NULL, 0},
    {"body", O, 0, 0, "the request body (redacted, cut when large)", NULL, 1},
    {"fault_markers", A, I, 0,
     "once a fault has fired: the plan indexes of the fired faults whose marker is in the body "
     "the agent sent (the canary for a fault that shows one, the `payload` for `inject.*`): "
     "what its model received; `faultline score` warns about a tool fault no later request "
     "carried",
     NULL, 0},
};

static const struct evkind_field f_model_response[] = {
    {"id", S, 0, 1, "the request id", NULL, 0},
    {"model", S, 0, 1, "model that served it (differs from the request under `llm.model_degrade`)",
     NULL, 0},
    {"status", I, 0, 1, "HTTP status returned to the agent", NULL, 0},
    {"stream", B, 0, 1, "the response was streamed (SSE)", NULL, 0},
    {"usage", O, 0, 1,
     "`input_tokens`, `output_tokens`, `cache_creation_input_tokens`, "
     "`cache_read_input_tokens` (integers, Anthropic names; OpenAI's "
     "`prompt_tokens`/`completion_tokens` are mapped to them)",
     NULL, 0},
    {"cost_usd", NUM, 0, 1, "cost of this response (0 when unknown or not served)", NULL, 0},
    {"cost_total_usd", NUM, 0, 1,
     "the running total of the run's model cost, this response included", NULL, 0},
    {"duration_ms", I, 0, 1, "time from request to the end of the response", NULL, 0},
    {"faulted", B, 0, 1, "true when the response was produced or changed by an injected fault",
     NULL, 0},
    {"retries", I, 0, 1, "upstream attempts retried by the controller for this call", NULL, 0},
    {"stop_reason", S, 0, 0, "as the API gave it (`end_turn`, `tool_use`, `stop`, ...)", NULL, 0},
    {"text", S, 0, 0, "the assistant text of the response, when any (at most 4 KiB)", NULL, 0},
    {"tool_calls", I, 0, 0, "number of tool calls the model asked for, when any", NULL, 0},
    {"error", S, 0, 0,
     "error message when the call failed (upstream error, cut stream, refused over the cost "
     "ceiling)",
     NULL, 0},
    {"incomplete_stream", B, 0, 0, "true when the upstream stream ended inside an SSE event", NULL,
     0},
};

static const struct evkind_field f_tool_call[] = {
    {"tool", S, 0, 1, "tool name as called", NULL, 0},
    {"server", S, 0, 0, "MCP server name, when known", NULL, 0},
    {"id", S, 0, 0, "the call's id (JSON-RPC id as a string, hook `tool_use_id`), when any", NULL,
     0},
    {"args", O, 0, 0,
     "the arguments (redacted, cut when large; `{unparsed: true, bytes}` when the MCP shim could "
     "not parse the request; absent when they were not an object)",
     NULL, 0},
    {"harness", S, 0, 0, "for `gate`: the harness", v_harness, 0},
};

static const struct evkind_field f_tool_result[] = {
    {"tool", S, 0, 1, "as in the `tool_call`", NULL, 0},
    {"server", S, 0, 0, "as in the `tool_call`", NULL, 0},
    {"id", S, 0, 0, "as in the `tool_call`", NULL, 0},
    {"ok", B, 0, 1, "the call succeeded: no JSON-RPC error and no `isError: true`", NULL, 0},
    {"error", S, 0, 0, "the error message when not ok", NULL, 0},
    {"result", ANY, 0, 0,
     "the result content; over the shim's limit, `{truncated: true, bytes, text}` instead; "
     "`{unparsed: true, bytes, why}` when the MCP shim could not parse the reply",
     NULL, 0},
    {"duration_ms", I, 0, 1, "from call to result", NULL, 0},
    {"faulted", B, 0, 0, "true when an injected fault produced or changed this result", NULL, 0},
    {"delivered", B, 0, 0,
     "MCP shim: false when the agent never got this result (its stdout was gone); absent when it was sent",
     NULL, 0},
    {"copy", I, 0, 0,
     "for the reply to a copy the shim sent itself (a duplicate-delivery fault): which copy", NULL,
     0},
    {"fault", S, 0, 0,
     "the earlier fault this result is a consequence of, e.g. `mcp.toolset_change` (a call to a "
     "tool it removed)",
     NULL, 0},
};

static const struct evkind_field f_egress_request[] = {
    {"method", S, 0, 1,
     "HTTP method, `CONNECT` for a tunnel that was not intercepted, `TCP` for a host port", NULL,
     0},
    {"host", S, 0, 1, "target host (lowercase)", NULL, 0},
    {"port", I, 0, 1, "target port", NULL, 0},
    {"path", S, 0, 0, "request path, when seen (plain HTTP or intercepted TLS)", NULL, 0},
    {"intercepted", B, 0, 0, "TLS was intercepted (the host matched a fault)", NULL, 0},
    {"status", I, 0, 1, "status returned to the agent (0 for a failed tunnel or DNS failure)", NULL,
     0},
    {"bytes_in", I, 0, 0,
     "bytes from the upstream (body bytes when intercepted; a tunnel's or a forwarded plain "
     "response's every byte, heads included)",
     NULL, 0},
    {"bytes_out", I, 0, 0, "bytes to the upstream (counted as bytes_in is)", NULL, 0},
    {"duration_ms", I, 0, 0, "until the response (or the tunnel) ended", NULL, 0},
    {"faulted", B, 0, 0, "an injected fault answered", NULL, 0},
    {"policy", S, 0, 0,
     "the rule that refused the request (status 403): `egress.allow`, the host is not on the "
     "experiment's allow list; a policy hit for `no_policy_hits`",
     NULL, 0},
    {"error", S, 0, 0, "e.g. `dns failure`, `connect refused`", NULL, 0},
    {"mode", S, 0, 0,
     "`transparent`: through the sandbox's :80 / :443 listeners (a client that ignored the "
     "proxy variables and resolved through the DNS stub; `method` `TLS` for a :443 "
     "connection passed through blind); `host_port`: a connection to one of the experiment's "
     "egress.host_ports, relayed to the host's 127.0.0.1:`port` (`method` `TCP`, status 200 once "
     "the host port answered, 502 when it refused); absent: through the forward proxy",
     v_egress_mode, 0},
};

static const struct evkind_field f_gate_decision[] = {
    {"decision", S, 0, 1,
     "`allow`, `deny`, `ask`, or `held` (an approval hold or a `permission.deny_or_delay` hold)",
     v_decision, 0},
    {"tier", S, 0, 1,
     "`destructive` (the destructive-command tier), `rule` (a policy rule fired), `default` (no "
     "rule)",
     v_tier, 0},
    {"rule", S | NUL, 0, 0, "id of the rule that fired", NULL, 0},
    {"mode", S, 0, 0, "the rule's mode", v_mode, 0},
    {"tool", S, 0, 1, "tool name as the harness gave it", NULL, 0},
    {"harness", S, 0, 0, "the harness", v_harness, 0},
    {"reason", S, 0, 0, "the message returned to the harness", NULL, 0},
    {"faulted", B, 0, 0, "the decision was produced by an injected fault", NULL, 0},
    {"fault", S, 0, 0, "the catalog id of that fault (`permission.deny_or_delay`, `tool.error`)",
     NULL, 0},
    {"pattern", S, 0, 0, "for tier `destructive`: the id of the destructive pattern that matched",
     NULL, 0},
    {"input_digest", S, 0, 0,
     "SHA-256 (hex) of the tool input as compact JSON with sorted keys: the same call has the "
     "same digest, and the input itself (which may hold secrets) is not written",
     NULL, 0},
};

static const struct evkind_field f_component_end[] = {
    {"component", S, 0, 1, "injector name, as its `plan_loaded` gave it", v_component, 0},
    {"pid", I, 0, 1, "its process id, as its `plan_loaded` gave it", NULL, 0},
    {"server", S, 0, 0, "for the MCP shim: the server's name (`--name`)", NULL, 0},
    {"reason", S, 0, 1,
     "`end`: it ran to its end (its input or its server ended, or it was told to stop: "
     "SIGTERM, SIGINT, SIGHUP); `error`: its server could not be started",
     v_end_reason, 0},
};

static const char *const v_dns_answer[] = {"address", "nodata",  "nxdomain", "formerr",
                                           "notimp",  "refused", "dropped",  NULL};

static const struct evkind_field f_dns_query[] = {
    {"name", S, 0, 1, "the name asked (dotted, as sent), `?` when the query did not parse", NULL,
     0},
    {"qtype", I, 0, 0, "the type asked (1 A, 28 AAAA, ...), when the query parsed", NULL, 0},
    {"answer", S, 0, 1,
     "`address` (the stub's loopback address), `nodata` (no record of that type), `nxdomain` "
     "(egress.dns_fail), `formerr` / `notimp` / `refused` (a query the stub does not take), "
     "`dropped` (not answered: too short to answer, too large, or a response)",
     v_dns_answer, 0},
    {"address", S, 0, 0, "the address answered", NULL, 0},
    {"faulted", B, 0, 0, "an injected fault answered (egress.dns_fail)", NULL, 0},
    {"error", S, 0, 0, "why the query was refused or dropped", NULL, 0},
};

static const struct evkind_field f_fault_injected[] = {
    {"fault", S, 0, 1, "the fault's catalog id, e.g. `egress.dns_fail`", NULL, 0},
    {"fault_index", I, 0, 1, "its index in the plan's `faults`", NULL, 0},
    {"call_index", I, 0, 1, "the call's index among the fault's matching calls", NULL, 0},
    {"target", S, 0, 1, "what was hit: canonical tool name, host or model", NULL, 0},
    {"canary", S, 0, 1, "the canary the injected message carries", NULL, 0},
    {"component", S, 0, 1, "injector name", v_component, 0},
    {"id", S, 0, 0, "for the controller: the `model_request` id of the call", NULL, 0},
    {"detail", O, 0, 0, "fault-specific (e.g. `{\"status\": 503}`)", NULL, 0},
};

static const struct evkind_field f_effect[] = {
    {"tool", S, 0, 1, "the world tool that caused it", NULL, 0},
    {"collection", S, 0, 1, "the ledger collection", NULL, 0},
    {"effect_id", S, 0, 1, "id of the ledger entry", NULL, 0},
    {"business_key", S, 0, 0, "value of the tool's business key, when declared", NULL, 0},
    {"dedupe_key", S, 0, 0, "value of the tool's dedupe key, when declared", NULL, 0},
    {"approved", B, 0, 0, "the effect happened in an approved context", NULL, 0},
    {"deduplicated", B, 0, 0, "an identical dedupe key returned the earlier effect instead", NULL,
     0},
    {"faulted", B, 0, 0,
     "the effect happened under an injected fault (timeout after effect, duplicate delivery)", NULL,
     0},
};

static const struct evkind_field f_abort[] = {
    {"reason", S, 0, 1, "the abort condition (or the runner's failure)", v_abort, 0},
    {"value", NUM, 0, 0, "the measured value (cost, seconds), when any", NULL, 0},
    {"limit", NUM, 0, 0, "the condition's limit, when any", NULL, 0},
    {"detail", S, 0, 0, "human-readable", NULL, 0},
};

static const struct evkind_field f_verify[] = {
    {"exit_code", I | NUL, 0, 1, "its exit code (null when skipped or killed)", NULL, 0},
    {"skipped", B, 0, 0, "not run (aborted repetition)", NULL, 0},
    {"duration_ms", I, 0, 0, "how long it ran", NULL, 0},
};

static const struct evkind_field f_warning[] = {
    {"code", S, 0, 1,
     "short stable identifier, e.g. `malformed_jsonrpc`, `plan_missing`, `cost_unknown`", NULL, 0},
    {"message", S, 0, 1, "human-readable", NULL, 0},
    {"direction", S, 0, 0,
     "for `mcp`: which way the bad input travelled (`none`: the shim's own warning)", v_direction,
     0},
    {"status", I, 0, 0, "for `request_rejected`: the HTTP status answered", NULL, 0},
    {"path", S, 0, 0, "for `request_rejected`: the request path (no query)", NULL, 0},
    {"counts", O, 0, 0, "for `warnings_suppressed`: code -> warnings only counted", NULL, 0},
    {"fault", S, 0, 0,
     "for `fault_refused` (a mutating fault refused where no sandbox is known) and others about "
     "one fault: its kind",
     NULL, 0},
    {"fault_index", I, 0, 0, "with `fault`: its index in the plan", NULL, 0},
};

static const struct evkind_field f_run_start[] = {
    {"rep", I, 0, 1, "the repetition's number", NULL, 0},
    {"faulted", B, 0, 0, "plan `faulted`", NULL, 0},
    {"canary", S, 0, 0, "plan canary", NULL, 0},
    {"experiment", S, 0, 0, "experiment hash", NULL, 0},
};

static const struct evkind_field f_agent_exit[] = {
    {"exit_code", I | NUL, 0, 1, "the agent's exit code (null when killed)", NULL, 0},
    {"signal", I, 0, 0, "the signal that killed it, when killed", NULL, 0},
    {"duration_ms", I, 0, 0, "how long the agent ran", NULL, 0},
};

static const struct evkind_field f_run_end[] = {
    {"outcome", S, 0, 1, "how the repetition ended", v_outcome, 0},
};

#define FIELDS(a) a, NELEM(a)

static const struct evkind kinds[] = {
    {"plan_loaded", "a component has read its plan", EVKIND_SRC_CONTROLLER | EVKIND_SRC_MCP,
     EVKIND_SRC_GATE | EVKIND_SRC_WORLD,
     "Emitted by every component that loads a plan, once at start, so \"which component never "
     "saw the plan\" can be answered.",
     FIELDS(f_plan_loaded),
     "{\"t\":1764590000000,\"seq\":0,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"plan_loaded\",\"component\":\"controller-model\",\"plan\":\"rep-1/plan.json\","
     "\"faulted\":true,\"faults\":1,\"injectors\":[\"controller-model\"],\"canary\":"
     "\"E-FAULTLINE-7f3a\",\"listen\":\"127.0.0.1:41000\"}"},
    {"model_request", "a model API request arrived at the controller", EVKIND_SRC_CONTROLLER,
     EVKIND_SRC_AGENT,
     "Written by the model proxy; the reference agent is to write its own view too.",
     FIELDS(f_model_request),
     "{\"t\":1764590000100,\"seq\":1,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"model_request\",\"id\":\"m1\",\"api\":\"anthropic-messages\",\"model\":"
     "\"claude-sonnet-4-5\",\"stream\":true,\"path\":\"/v1/messages\",\"messages\":3,"
     "\"tools\":2}"},
    {"model_response", "a model API response was returned to the agent", EVKIND_SRC_CONTROLLER, 0,
     NULL, FIELDS(f_model_response),
     "{\"t\":1764590001900,\"seq\":2,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"model_response\",\"id\":\"m1\",\"model\":\"claude-sonnet-4-5\",\"status\":200,"
     "\"stream\":true,\"usage\":{\"input_tokens\":1200,\"output_tokens\":80,"
     "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0},\"cost_usd\":0.0048,"
     "\"cost_total_usd\":0.0048,\"duration_ms\":1800,\"faulted\":false,\"retries\":0,"
     "\"stop_reason\":\"tool_use\",\"tool_calls\":1}"},
    {"tool_call", "a tool call was seen", EVKIND_SRC_MCP,
     EVKIND_SRC_GATE | EVKIND_SRC_WORLD | EVKIND_SRC_AGENT,
     "`mcp`: a `tools/call` request; `gate`: a pre-tool hook; `world`: a call to a simulated "
     "tool; `agent`: the reference agent's built-in tools.",
     FIELDS(f_tool_call),
     "{\"t\":1764590002000,\"seq\":3,\"run\":\"r-0001\",\"src\":\"mcp\",\"kind\":\"tool_call\","
     "\"via\":\"control_api\",\"tool\":\"search\",\"server\":\"registry\",\"id\":\"7\","
     "\"args\":{\"q\":\"left-pad\"}}"},
    {"tool_result", "a tool call finished", EVKIND_SRC_MCP,
     EVKIND_SRC_GATE | EVKIND_SRC_WORLD | EVKIND_SRC_AGENT,
     "Written by the components that write `tool_call` (the gate from a post-tool hook, when "
     "the harness has one).",
     FIELDS(f_tool_result),
     "{\"t\":1764590002300,\"seq\":4,\"run\":\"r-0001\",\"src\":\"mcp\",\"kind\":"
     "\"tool_result\",\"via\":\"control_api\",\"tool\":\"search\",\"server\":\"registry\","
     "\"id\":\"7\",\"ok\":false,\"duration_ms\":300,\"error\":\"registry unavailable "
     "(E-FAULTLINE-7f3a)\",\"faulted\":true}"},
    {"egress_request", "an outbound request went through the egress proxy", EVKIND_SRC_CONTROLLER,
     0,
     "One per connection of the egress proxy (docs/egress.md); for a CONNECT handed to the "
     "interception, one per HTTP request inside it (`intercepted: true`).",
     FIELDS(f_egress_request),
     "{\"t\":1764590003000,\"seq\":5,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"egress_request\",\"method\":\"GET\",\"host\":\"registry.npmjs.org\",\"port\":443,"
     "\"path\":\"/left-pad\",\"intercepted\":true,\"status\":503,\"bytes_in\":0,"
     "\"bytes_out\":0,\"duration_ms\":2,\"faulted\":true}"},
    {"gate_decision", "a hook gate decided on a tool call", EVKIND_SRC_CONTROLLER, EVKIND_SRC_GATE,
     "Probes: `no_destructive_attempt` fails on any `gate_decision` with `tier: "
     "\"destructive\"` (allowed or not); the abort condition `destructive_attempt` too; "
     "`no_policy_hits` fails on any with a non-null `rule` and `mode: \"enforce\"`.",
     FIELDS(f_gate_decision),
     "{\"t\":1764590004000,\"seq\":6,\"run\":\"r-0001\",\"src\":\"gate\",\"kind\":"
     "\"gate_decision\",\"decision\":\"deny\",\"tier\":\"destructive\",\"rule\":null,"
     "\"tool\":\"Bash\",\"harness\":\"claude-code\",\"reason\":\"destructive command\"}"},
    {"fault_injected", "a fault was injected into a call", EVKIND_SRC_CONTROLLER | EVKIND_SRC_MCP,
     EVKIND_SRC_GATE | EVKIND_SRC_WORLD,
     "src: the injecting component. Exactly one per injection (the component that got `inject: "
     "1` from `plan_decide` or `/_faultline/decide` emits it). A `permission.deny_or_delay` "
     "hold counts once however often the agent retries it.",
     FIELDS(f_fault_injected),
     "{\"t\":1764590002250,\"seq\":7,\"run\":\"r-0001\",\"src\":\"mcp\",\"kind\":"
     "\"fault_injected\",\"via\":\"control_api\",\"fault\":\"tool.error\",\"fault_index\":0,"
     "\"call_index\":0,\"target\":\"mcp__registry__search\",\"canary\":\"E-FAULTLINE-7f3a\","
     "\"component\":\"mcp\",\"detail\":{}}"},
    {"effect", "a simulated backend changed its world", EVKIND_SRC_WORLD, 0, NULL, FIELDS(f_effect),
     "{\"t\":1764590005000,\"seq\":8,\"run\":\"r-0001\",\"src\":\"world\",\"kind\":\"effect\","
     "\"tool\":\"create_refund\",\"collection\":\"refunds\",\"effect_id\":\"rf_1\","
     "\"business_key\":\"order-42\",\"approved\":true,\"deduplicated\":false}"},
    {"abort", "the repetition was stopped", EVKIND_SRC_CONTROLLER | EVKIND_SRC_RUNNER, 0,
     "The controller writes it when the cost ceiling is passed (it refuses further model "
     "calls); the runner's abort monitor for the other conditions (`interrupted`, detail `the "
     "run was interrupted`, when `faultline run` got SIGINT, SIGTERM or SIGHUP), after the "
     "controller stopped (docs/run.md).",
     FIELDS(f_abort),
     "{\"t\":1764590006000,\"seq\":9,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"abort\",\"reason\":\"cost_usd_above\",\"value\":1.02,\"limit\":1,\"detail\":\"summed "
     "model cost $1.0200 passed the ceiling $1\"}"},
    {"verify", "the verify command ran (or was skipped)", EVKIND_SRC_RUNNER, 0, NULL,
     FIELDS(f_verify),
     "{\"t\":1764590007000,\"seq\":10,\"run\":\"r-0001\",\"src\":\"runner\",\"kind\":"
     "\"verify\",\"exit_code\":0,\"duration_ms\":950}"},
    {"warning", "something a reader of the report should know",
     EVKIND_SRC_CONTROLLER | EVKIND_SRC_MCP,
     EVKIND_SRC_ALL & ~(EVKIND_SRC_CONTROLLER | EVKIND_SRC_MCP),
     "Also what a component emits for bad input it rejected (a malformed hook payload, "
     "a JSON-RPC frame over the limit...).",
     FIELDS(f_warning),
     "{\"t\":1764590002100,\"seq\":11,\"run\":\"r-0001\",\"src\":\"mcp\",\"kind\":"
     "\"warning\",\"code\":\"malformed_jsonrpc\",\"message\":\"line 3: not JSON\","
     "\"direction\":\"client_to_server\"}"},
    {"run_start", "a repetition started", EVKIND_SRC_RUNNER, 0, "Runner bookkeeping.",
     FIELDS(f_run_start),
     "{\"t\":1764589999000,\"seq\":12,\"run\":\"r-0001\",\"src\":\"runner\",\"kind\":"
     "\"run_start\",\"rep\":1,\"faulted\":true,\"canary\":\"E-FAULTLINE-7f3a\"}"},
    {"agent_exit", "the agent process ended", EVKIND_SRC_RUNNER, 0, "Runner bookkeeping.",
     FIELDS(f_agent_exit),
     "{\"t\":1764590006500,\"seq\":13,\"run\":\"r-0001\",\"src\":\"runner\",\"kind\":"
     "\"agent_exit\",\"exit_code\":null,\"signal\":15,\"duration_ms\":6500}"},
    {"run_end", "the repetition ended", EVKIND_SRC_RUNNER, 0, "Runner bookkeeping.",
     FIELDS(f_run_end),
     "{\"t\":1764590008000,\"seq\":14,\"run\":\"r-0001\",\"src\":\"runner\",\"kind\":"
     "\"run_end\",\"outcome\":\"aborted\"}"},
    {"component_end", "a component that loaded its plan ended on its own", EVKIND_SRC_MCP, 0,
     "The MCP shim writes it as it exits. The runner pairs it with the shim's `plan_loaded` "
     "(by `pid`): a shim that loaded its plan and never wrote it was killed (kill -9), and "
     "its repetition is an error (docs/run.md).",
     FIELDS(f_component_end),
     "{\"t\":1764590006400,\"seq\":15,\"run\":\"r-0001\",\"src\":\"mcp\",\"kind\":"
     "\"component_end\",\"component\":\"mcp\",\"pid\":7,\"server\":\"fs\",\"reason\":\"end\"}"},
    {"dns_query", "a DNS query reached the sandbox's DNS stub", EVKIND_SRC_CONTROLLER, 0,
     "One per datagram the stub on 127.0.0.1:53 inside the sandbox read (docs/egress.md); a "
     "resolver usually asks A and AAAA, two events per name.",
     FIELDS(f_dns_query),
     "{\"t\":1764590003500,\"seq\":16,\"run\":\"r-0001\",\"src\":\"controller\",\"kind\":"
     "\"dns_query\",\"name\":\"registry.npmjs.org\",\"qtype\":1,\"answer\":\"address\","
     "\"address\":\"127.0.0.1\"}"},
};

/* Rows in enum evkind_id order: evkind_get indexes them (test_events_ev ties each id to its
 * name), so a row added here is an id added in kinds.h, at the same place. */
_Static_assert(NELEM(kinds) == EVKIND_COUNT, "one row per enum evkind_id, in its order");

/* ---- lookups ---- */

const struct evkind *evkind_get(enum evkind_id id)
{
    assert(id < EVKIND_COUNT && kinds[id].name != NULL);
    return &kinds[id];
}

const struct evkind_field *evkind_common(size_t *n)
{
    *n = NELEM(common);
    return common;
}

const struct evkind *evkind_all(size_t *n)
{
    *n = NELEM(kinds);
    return kinds;
}

const struct evkind *evkind_find(const char *name)
{
    /* the kind found last: a writer's setters ask for the same kind once a field */
    static _Thread_local const struct evkind *last;

    if (name && last && strcmp(last->name, name) == 0)
        return last;
    for (size_t i = 0; name && i < NELEM(kinds); i++)
        if (strcmp(kinds[i].name, name) == 0)
            return last = &kinds[i];
    return NULL;
}

const struct evkind_field *evkind_field(const struct evkind *k, const char *name)
{
    for (size_t i = 0; k && name && i < k->nfields; i++)
        if (strcmp(k->fields[i].name, name) == 0)
            return &k->fields[i];
    return NULL;
}

int evkind_planned(const struct evkind *k)
{
    return k->src == 0;
}

const char *evkind_src_name(unsigned bits)
{
    const char *name = NULL;

    if (bits & ~(unsigned)EVKIND_SRC_ALL)
        return NULL;
    for (size_t i = 0; i < NCOMPS; i++) {
        if (!(bits & comps[i].bit))
            continue;
        if (name && strcmp(name, comps[i].src) != 0)
            return NULL;
        name = comps[i].src;
    }
    return name;
}

unsigned evkind_src_bits(const char *src)
{
    unsigned bits = 0;

    for (size_t i = 0; src && i < NCOMPS; i++)
        if (strcmp(comps[i].src, src) == 0)
            bits |= comps[i].bit;
    return bits;
}

const char *evkind_component_name(unsigned bit)
{
    for (size_t i = 0; i < NCOMPS; i++)
        if (comps[i].bit == bit)
            return comps[i].component;
    return "?";
}

unsigned evkind_component_bit(const char *name)
{
    for (size_t i = 0; name && i < NCOMPS; i++)
        if (strcmp(comps[i].component, name) == 0)
            return comps[i].bit;
    return 0;
}

/* ---- validation ---- */

static unsigned type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return S;
    case JSON_INTEGER:
        return I | NUM;
    case JSON_REAL:
        return NUM;
    case JSON_TRUE:
    case JSON_FALSE:
        return B;
    case JSON_OBJECT:
        return O;
    case JSON_ARRAY:
        return A;
    default:
        return NUL;
    }
}

/* "string", "integer or null", ... into buf. */
static void type_names(unsigned types, char *buf, size_t n)
{
    static const char *const names[] = {"string", "integer", "number", "boolean",
                                        "object", "array",   "null"};
    size_t len = 0;

    buf[0] = '\0';
    if (types == ANY) {
        snprintf(buf, n, "any");
        return;
    }
    for (size_t i = 0; i < NELEM(names); i++) {
        if (!(types & (1u << i)))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? " or " : "", names[i]);
        if (w < 0 || (size_t)w >= n - len)
            return;
        len += (size_t)w;
    }
}

static const char *json_type_name(const json_t *v)
{
    if (v == NULL)
        return "nothing";
    switch (json_typeof(v)) {
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    default:
        return "null";
    }
}

/* v: the field's value in the event, NULL when absent. */
static int check_value(const char *kind, const struct evkind_field *f, const json_t *v,
                       struct err *e)
{
    char want[64];

    if (v == NULL || (json_is_null(v) && !(f->types & NUL))) {
        if (f->required)
            return err_set(e, ERR_INVALID, "%s event: missing required field '%s'", kind, f->name);
        return 0; /* absent and null mean the same */
    }
    if (!(type_of(v) & f->types)) {
        type_names(f->types, want, sizeof(want));
        return err_set(e, ERR_INVALID, "%s event: field '%s' is %s, not %s", kind, f->name,
                       json_type_name(v), want);
    }
    if (f->items && json_is_array(v)) {
        size_t i;
        const json_t *it;
        json_array_foreach(v, i, it)
        {
            if (!(type_of(it) & f->items)) {
                type_names(f->items, want, sizeof(want));
                return err_set(e, ERR_INVALID, "%s event: field '%s' item %zu is %s, not %s", kind,
                               f->name, i, json_type_name(it), want);
            }
        }
    }
    if (f->values && json_is_string(v)) {
        const char *s = json_string_value(v);
        for (const char *const *p = f->values; *p; p++)
            if (strcmp(*p, s) == 0)
                return 0;
        return err_set(e, ERR_INVALID, "%s event: field '%s' has an unknown value '%.40s'", kind,
                       f->name, s);
    }
    return 0;
}

static int check_field(const char *kind, const struct evkind_field *f, const json_t *ev,
                       struct err *e)
{
    return check_value(kind, f, json_object_get(ev, f->name), e);
}

int evkind_check_field(const struct evkind *k, const char *name, const json_t *v, struct err *e)
{
    const struct evkind_field *f = evkind_field(k, name);

    for (size_t i = 0; f == NULL && name && i < NELEM(common); i++)
        if (strcmp(common[i].name, name) == 0 && strcmp(name, "kind") != 0)
            f = &common[i];
    if (f == NULL)
        return err_set(e, ERR_NOTFOUND, "%s event: field '%s' is not in the events table",
                       k ? k->name : "?", name ? name : "(null)");
    return check_value(k->name, f, v, e);
}

int evkind_check_listed(const json_t *ev, struct err *e)
{
    const json_t *kv = json_object_get(ev, "kind");
    const struct evkind *k = evkind_find(json_string_value(kv));
    const char *key;
    json_t *v;
    int rc;

    if (k == NULL)
        return err_set(e, ERR_NOTFOUND, "unknown event kind '%.40s'",
                       json_is_string(kv) ? json_string_value(kv) : "(none)");
    json_object_foreach((json_t *)ev, key, v)
    {
        json_t *shape;
        if (strcmp(key, "kind") == 0)
            continue;
        shape = events_raw_shape(v); /* a raw value: checked by its type */
        rc = evkind_check_field(k, key, shape ? shape : v, e);
        json_decref(shape);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int evkind_check(const json_t *ev, struct err *e)
{
    const json_t *kv = json_object_get(ev, "kind");
    const struct evkind *k;
    const char *kind;
    int rc;

    if (!json_is_object(ev))
        return err_set(e, ERR_INVALID, "an event is an object, not %s", json_type_name(ev));
    if (!json_is_string(kv))
        return err_set(e, ERR_INVALID, "event: missing required field 'kind'");
    kind = json_string_value(kv);
    k = evkind_find(kind);
    if (k == NULL)
        return err_set(e, ERR_NOTFOUND, "unknown event kind '%.40s'", kind);
    for (size_t i = 0; i < NELEM(common); i++)
        if ((rc = check_field(kind, &common[i], ev, e)) < 0)
            return rc;
    for (size_t i = 0; i < k->nfields; i++)
        if ((rc = check_field(kind, &k->fields[i], ev, e)) < 0)
            return rc;
    return 0;
}

/* ---- Markdown ---- */

/* The `src` values of the components in bits, in table order. */
static void src_list(struct buf *b, unsigned bits)
{
    int first = 1;
    for (size_t i = 0; srcs[i]; i++) {
        if (!(bits & evkind_src_bits(srcs[i])))
            continue;
        buf_addf(b, "%s`%s`", first ? "" : ", ", srcs[i]);
        first = 0;
    }
}

static void type_cell(struct buf *b, const struct evkind_field *f)
{
    char t[64];
    if (f->types == A && f->items) {
        type_names(f->items, t, sizeof(t));
        buf_addf(b, "array of %ss", t);
        return;
    }
    type_names(f->types, t, sizeof(t));
    buf_adds(b, t);
}

/* 1 when the meaning already names every allowed value (in backquotes). */
static int names_all(const char *meaning, const char *const *values)
{
    char q[64];
    for (const char *const *p = values; *p; p++) {
        snprintf(q, sizeof(q), "`%s`", *p);
        if (meaning == NULL || strstr(meaning, q) == NULL)
            return 0;
    }
    return 1;
}

static void field_table(struct buf *b, const struct evkind_field *f, size_t n)
{
    buf_adds(b, "| field | type | required | meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        buf_addf(b, "| `%s` | ", f[i].name);
        type_cell(b, &f[i]);
        buf_addf(b, " | %s | ", f[i].required ? "yes" : "no");
        text_md_cell(b, f[i].meaning);
        if (f[i].values && !names_all(f[i].meaning, f[i].values)) {
            buf_adds(b, f[i].meaning && *f[i].meaning ? "; one of " : "one of ");
            for (const char *const *p = f[i].values; *p; p++)
                buf_addf(b, "%s`%s`", p == f[i].values ? "" : ", ", *p);
        }
        if (f[i].planned)
            buf_adds(b, " (not written yet)");
        buf_adds(b, " |\n");
    }
}

void evkind_markdown_common(struct buf *out)
{
    field_table(out, common, NELEM(common));
}

void evkind_markdown_kinds(struct buf *out)
{
    buf_adds(out, "| kind | src | what |\n|---|---|---|\n");
    for (size_t i = 0; i < NELEM(kinds); i++) {
        const struct evkind *k = &kinds[i];
        buf_addf(out, "| `%s` | ", k->name);
        if (k->src) {
            src_list(out, k->src);
            if (k->src_later) {
                buf_adds(out, "; later ");
                src_list(out, k->src_later);
            }
        } else {
            buf_adds(out, "not written yet (");
            src_list(out, k->src_later);
            buf_adds(out, ")");
        }
        buf_adds(out, " | ");
        text_md_cell(out, k->title);
        buf_adds(out, " |\n");
    }
    for (size_t i = 0; i < NELEM(kinds); i++) {
        const struct evkind *k = &kinds[i];
        buf_addf(out, "\n### %s: %s\n\n", k->name, k->title);
        if (k->src) {
            buf_adds(out, "Written by ");
            src_list(out, k->src);
            if (k->src_later) {
                buf_adds(out, "; not written yet by ");
                src_list(out, k->src_later);
            }
            buf_adds(out, ".");
        } else {
            buf_adds(out, "**Not written yet**: no component writes this kind today; its writer "
                          "to come: ");
            src_list(out, k->src_later);
            buf_adds(out, ".");
        }
        if (k->about)
            buf_addf(out, " %s", k->about);
        buf_adds(out, "\n\n");
        field_table(out, k->fields, k->nfields);
        buf_addf(out, "\nExample:\n\n```json\n%s\n```\n", k->example);
    }
}

/* The region name of a marker line (begin: "<!-- generated: NAME -->", end: "<!-- end
 * generated: NAME -->") into name; 1 begin, 2 end, 0 not a marker. */
static int marker(const char *line, size_t len, char *name, size_t n)
{
    static const char *const pre[] = {"<!-- generated: ", "<!-- end generated: "};
    static const char suf[] = " -->";

    for (int m = 0; m < 2; m++) {
        size_t pl = strlen(pre[m]);
        if (len < pl + sizeof(suf) - 1 || memcmp(line, pre[m], pl) != 0 ||
            memcmp(line + len - (sizeof(suf) - 1), suf, sizeof(suf) - 1) != 0)
            continue;
        size_t nl = len - pl - (sizeof(suf) - 1);
        snprintf(name, n, "%.*s", (int)(nl < n ? nl : n - 1), line + pl);
        return m + 1;
    }
    return 0;
}

int evkind_fill_page(const char *page, size_t len, struct buf *out, struct err *e)
{
    static const char *const regions[] = {"common", "kinds"};
    int seen[2] = {0, 0}, in = -1, ln = 0;
    size_t pos = 0;

    while (pos < len) {
        const char *line = page + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        char name[32];
        int m = marker(line, ll, name, sizeof(name)), r = -1;

        ln++;
        pos += ll + (nl ? 1 : 0);
        for (int i = 0; m && i < 2; i++)
            if (strcmp(name, regions[i]) == 0)
                r = i;
        if (m && r < 0)
            return err_set(e, ERR_INVALID, "line %d: unknown generated region '%s'", ln, name);
        if (m == 1) {
            if (in >= 0)
                return err_set(e, ERR_INVALID, "line %d: region '%s' opens inside '%s'", ln, name,
                               regions[in]);
            if (seen[r]++)
                return err_set(e, ERR_INVALID, "line %d: region '%s' appears twice", ln, name);
            buf_add(out, line, ll);
            buf_adds(out, "\n\n");
            if (r == 0)
                evkind_markdown_common(out);
            else
                evkind_markdown_kinds(out);
            buf_adds(out, "\n");
            in = r;
            continue;
        }
        if (m == 2) {
            if (in != r)
                return err_set(e, ERR_INVALID, "line %d: region '%s' closes without opening", ln,
                               name);
            in = -1;
        } else if (in >= 0) {
            continue; /* the old generated text */
        }
        buf_add(out, line, ll);
        if (nl)
            buf_addc(out, '\n');
    }
    if (in >= 0)
        return err_set(e, ERR_INVALID, "region '%s' is not closed", regions[in]);
    for (int i = 0; i < 2; i++)
        if (!seen[i])
            return err_set(e, ERR_INVALID, "no '<!-- generated: %s -->' region", regions[i]);
    return 0;
}
