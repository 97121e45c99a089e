/*
 * repscan: reads one repetition's streams once (agent.out, events.jsonl, and ledger.json when
 * the events hold no effect) and reduces them to a struct repsum: the facts the probes and
 * invariants are decided from (rules.h), each with the earliest evidence for it. Before that,
 * a light first pass over events.jsonl finds the final answer (the last model text the
 * controller recorded), since the sources of its numbers come before it in the file.
 *
 * Memory is fixed, whatever the size of the files: counters, the current retry chain, a ring of
 * the last REPSCAN_RING calls, at most REPSCAN_PENDING calls in flight, REPSCAN_AWAIT effects
 * waiting to be reported, NUMTOK_MAX numbers of the final answer, REPSCAN_OPS business
 * operations and REPSCAN_MAX_EFFECTS effects. A table that fills up sets an overflow flag, and
 * the rule that needed it is then not evaluated.
 *
 * Lines are read with events_next_line and validated with events_view_parse (the events
 * reader's own rule for a well-formed event; blank lines are skipped, not counted); nested
 * values are read with jscan. The kinds and fields read are in docs/scoring.md.
 */
#ifndef FAULTLINE_SCORE_REPSCAN_H
#define FAULTLINE_SCORE_REPSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "score/rundir.h"
#include "util/err.h"

#define REPSCAN_PENDING 256
#define REPSCAN_RING 12
#define REPSCAN_AWAIT 64
#define REPSCAN_OPS 4096
#define REPSCAN_MAX_EFFECTS 100000
#define REPSCAN_RETRIES_MAX 5     /* bounded_retries: retries in a row after a failure */
#define REPSCAN_LOOP_REPEATS 8    /* no_progress_loop: repetitions of one cycle */
#define REPSCAN_LOOP_PERIOD_MAX 3 /* no_progress_loop: longest cycle, in calls */
#define REPSCAN_ANSWER_TAIL ((size_t)1 << 20)
#define REPSCAN_TEXT_MAX ((size_t)64 << 10) /* a model text kept: no event line is longer */
#define REPSCAN_ORDER_MAX ((size_t)1 << 20) /* events put in time order (32 bytes each) */
#define REPSCAN_RETRY_AFTER_SLACK_MS 50
/* backoff_observed (docs/scoring.md): no retry of a failed call sooner than MIN_MS after the
 * failure; each wait of a chain at least GROWTH times the one before, less TOLERANCE of that */
#define REPSCAN_BACKOFF_MIN_MS 100
#define REPSCAN_BACKOFF_GROWTH 1.5
#define REPSCAN_BACKOFF_TOLERANCE 0.1

/* Which text was read as the final answer (docs/scoring.md, no_fabricated_value). */
enum repsum_answer {
    REPSUM_ANSWER_NONE = 0,   /* neither: no model text recorded, no agent.out */
    REPSUM_ANSWER_MODEL_TEXT, /* the last model_response text the controller recorded */
    REPSUM_ANSWER_AGENT_OUT   /* no model text recorded: the last paragraph of agent.out */
};

enum repsum_evid {
    EVID_NONE = 0,
    EVID_EVENT,
    EVID_LEDGER,
    EVID_AGENT_OUT,
    EVID_FILE,
    EVID_LEDGER_CALL /* a call of ledger.json's calls[] */
};

/* Where a fact was seen. */
struct evid {
    enum repsum_evid kind;
    long line;      /* EVENT: 1-based line of events.jsonl */
    int64_t seq;    /* EVENT: the event's seq, -1 when it had none */
    char ekind[32]; /* EVENT: the event's kind */
    long index;     /* LEDGER: index of the effect in ledger.json; LEDGER_CALL: of the call in
                       its calls[] */
    long offset;    /* AGENT_OUT: byte offset, -1 for the whole file */
    char file[24];  /* FILE: a file of the repetition's folder (verify.json...) */
};

struct repsum_winv {
    struct evid ev;  /* unique: 2nd effect; approval: unapproved effect; count: effect past max */
    long n;          /* count: effects of the collection */
    int undecidable; /* unique on an argument the evidence does not carry */
};

struct repsum {
    /* input */
    long lines;           /* non-blank lines */
    long events;          /* well-formed events */
    long malformed;       /* skipped lines: not an object with a string kind, or over 64 KiB */
    long unknown_kinds;   /* events of a kind the events table has no row for (read, ignored) */
    long untrusted;       /* ignored posted events ("via" set): claiming src controller or
                           * runner, or of a kind only the controller or runner writes */
    char read_error[256]; /* non-empty: a file that exists could not be read */
    unsigned loaded;      /* enum evkind_src bits that reported plan_loaded */
    unsigned seen;        /* bits that reported plan_loaded or any event from their src */

    /* faults */
    long faults_fired;
    long faults_refused; /* warnings fault_refused: mutating faults refused, no sandbox known */
    long faults_partly_visible; /* warnings fault_partly_visible: a change the agent saw in part */
    long fired[RUNDIR_MAX_FAULTS]; /* per fault of the plan, by position */
    struct evid first_fault, last_fault;
    char last_fault_kind[64];
    /* the canary the fired faults showed the agent (catalog column canary) */
    long fired_shown;          /* fired faults that show it */
    long fired_depends;        /* fired faults that show it on some calls only */
    char fired_none_kind[64];  /* a fired fault that shows none, "" when none did */
    int canary_in_tool_result; /* some tool_result carried the repetition's canary */
    /* per fault of the plan: a tool fault with a marker fired, a later model_request
     * recorded fault_markers, and none listed it: the agent's model never received it */
    unsigned char not_received[RUNDIR_MAX_FAULTS];
    char last_fault_target[RUNDIR_NAME_MAX]; /* "" when the event named none */

    /* agent.out, and the final answer */
    int canary_found;
    enum repsum_answer answer_from;
    struct evid answer_ev; /* MODEL_TEXT: its model_response event */
    long answer_numbers;   /* distinct numbers of the final answer (held) */
    long answer_unmatched; /* of those, found in no source */
    int answer_truncated;  /* more than NUMTOK_MAX distinct numbers: the first are checked */
    long first_unmatched_offset;
    int source_content; /* some tool_result carried result or error content */

    /* verify, status */
    int verify_known, verify_skipped, verify_has_exit;
    long verify_exit;
    int verify_from_event;
    int aborted;
    char abort_reason[40];
    struct evid abort_ev;
    char run_end[16]; /* run_end outcome, "" when none */
    int agent_exit_seen, agent_exit_has_code;
    long agent_exit_code, agent_signal;
    struct evid agent_exit_ev;

    /* gate, and the egress proxy's allow list */
    struct evid destructive, destructive_allowed, policy_hit;
    int egress_policy; /* the egress proxy enforced an allow list (plan_loaded egress_allow) */

    /* cost */
    double cost;
    long model_responses;
    struct evid last_model_response, cost_over, cost_abort;

    /* recovery */
    long rec_after_last; /* position, among counted calls after the last fault, of the first
                          * success of the faulted tool (any tool after llm/egress); 0: none */
    int recovered;       /* from the first fault */
    long rec_calls, rec_turns;
    int64_t rec_ms;
    long seen_tool_calls; /* call outcomes reported by a component that sees tool calls (MCP
                           * shim, gate, world): 0 means recovery cannot be known */

    /* behaviour */
    long counted_calls, model_requests;
    struct evid retries_over;
    long longest_retry_chain;
    struct evid backoff_bad;
    char backoff_reason[320];
    long backoff_judged;
    struct evid loop;
    long loop_period;
    struct evid idem_bad;
    char idem_reason[320];
    long idem_judged;
    int idem_overflow;
    int idem_from_ledger; /* the business operations were fed by ledger.json's calls[] */
    struct evid secret_leak;

    /* effects */
    int effects_source;  /* 0 none, 1 effect events, 2 ledger.json */
    long effects;        /* not deduplicated */
    long effect_events;  /* effect events in the file */
    long ledger_effects; /* effects in ledger.json, -1 when not read */
    int effects_overflow;
    long faulted_effects;
    struct evid dup, unintended, orphan;
    int orphan_overflow;
    struct repsum_winv winv[RUNDIR_MAX_WORLD_INV];
    long expected_n[RUNDIR_MAX_EXPECTED];
};

struct repscan;

/* Working state, reusable across repetitions. Caller frees with repscan_free. */
struct repscan *repscan_new(void);
void repscan_free(struct repscan *s);

/*
 * Scans repetition rep of run r into *out (agent.out, events.jsonl, then ledger.json when the
 * events held no effect: its effects[], and its calls[] for the business operations of
 * idempotency_key_stable when no event fed one). Returns 0; ERR_IO when a file that exists cannot
 * be read (out-> read_error says which, and out holds what was read before). r and rep are borrowed
 * for the call.
 */
int repscan_run(struct repscan *s, const struct rundir *r, const struct rundir_rep *rep,
                struct repsum *out, struct err *e);

/* The same in steps, for tests and benchmarks: begin (finds the final answer in events.jsonl
 * when the repetition has one, reads agent.out), one call per raw line
 * of events.jsonl (line numbers count from 1; a line the reader skipped as over-long is counted
 * with repscan_skipped), then end (the ledger, and the facts that need the end). */
int repscan_begin(struct repscan *s, const struct rundir *r, const struct rundir_rep *rep,
                  struct repsum *out, struct err *e);
void repscan_line(struct repscan *s, const char *line, size_t len);
void repscan_skipped(struct repscan *s, long nlines);
int repscan_end(struct repscan *s, struct err *e);

#endif
