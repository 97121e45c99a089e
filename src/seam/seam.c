/*
 * seam: see seam.h.
 *
 * Standalone mode queues events (a JSON array) and, in seam_flush, which the component calls
 * once it has written what its peers were waiting for (the shim: the client and the server),
 * hands them to its events writer thread (evwriter.h), which appends them (a batch in one
 * write(2)): recording is off the round trip and does not delay the component's next read;
 * events are stamped (events_stamp: t and t_us) when emitted, so their time is when the
 * component saw the thing happen, not when the batch is written or posted.
 *
 * Controller mode has two threads and no jansson value crosses between them:
 *   caller thread  ct_decide: POST /_faultline/decide on its own connection, within decide_ms
 *                  (a new connection, when needed, gets as long again to open), unless the
 *                  breaker (breaker.h) is open; a timeout or a connection failure trips it and
 *                  queues a controller_slow warning.
 *                  ct_emit: stamps t, t_us and src, serializes, pushes the line to the outq
 *                  (outq.h: past QUEUE_MAX lines the oldest are dropped, counted).
 *   sender thread  sender_main, on its own connection: when woken (seam_flush, a full batch,
 *                  exit) posts up to POST_MAX lines in one request. A post that failed before
 *                  sending keeps its batch for the retry; one that failed after sending started
 *                  drops it (the controller may have recorded it: a second copy would show
 *                  calls twice), counted. After a failure it posts again only once a health
 *                  probe passes (every PROBE_MS); it also probes while the breaker is open and
 *                  resets it (a second controller_slow warning tells how many calls went
 *                  undecided). Drops are told by an events_dropped warning leading the next
 *                  batch. At exit it gets FLUSH_MS for what is left.
 * Shared state (struct ct_sender) is under one mutex, never held across a request.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events/ev.h"
#include "events/events.h"
#include "plan/plan.h"
#include "seam/breaker.h"
#include "seam/client.h"
#include "seam/evwriter.h"
#include "seam/outq.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define QUEUE_MAX 10000
#define POST_MAX 1000
#define DECIDE_MS 400 /* default decision deadline (FAULTLINE_CONTROL_DECIDE_MS) */
#define DECIDE_MS_MAX 60000
#define HEALTH_MS 1000        /* the health check at start */
#define PROBE_MS 250          /* between background probes of a controller that did not answer */
#define PROBE_TIMEOUT_MS 1000 /* one probe */
#define EVENTS_CONNECT_MS 1000
#define EVENTS_IO_MS 2000 /* one events POST */
#define FLUSH_MS 2000     /* at exit, for what is still queued */

/* The sender thread and what it shares with the caller's thread, all under mu. */
struct ct_sender {
    pthread_t th;
    int inited, started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct seam_outq q;       /* serialized events waiting to be posted */
    struct seam_breaker br;   /* decisions: tripped by the caller, probed and reset here */
    uint64_t lost;            /* events in batches that failed after sending started */
    uint64_t reported;        /* of q.dropped + lost, how many an events_dropped told */
    int wake;                 /* the caller asked for a post (seam_flush, a full batch) */
    int stop;                 /* exit: post what is left until stop_deadline_ms */
    int64_t stop_deadline_ms; /* monotonic */
    size_t unsent;            /* at exit: events left */
    struct seam_client *cc;   /* the sender's own connection (one client per thread) */
    int connect_ms, io_ms;
    const char *component; /* events' src and the log module */
};

struct seam {
    const char *component;
    /* standalone */
    struct plan *plan; /* also in controller mode when a plan file is given: never decides */
    struct events_writer *ew;
    struct seam_evwriter *evw; /* appends ew's events on a thread of its own */
    json_t *queue;
    /* controller */
    struct seam_client *cc; /* decisions, on the caller's thread */
    int decide_ms;
    struct ct_sender snd;
    char *canary;
    /* both: the plan's JSON when known (for faults decided outside calls) */
    json_t *plan_json;
    uint64_t seed;
    int records;     /* seam_emit records: an events file or a controller */
    int mutating_ok; /* seam_mutating_allowed */
};

/* ---- standalone ---- */

static int sa_decide(struct seam *x, const struct plan_call *call, struct seam_decision *out)
{
    struct plan_decision d;

    if (x->plan == NULL)
        return 0;
    if (plan_decide(x->plan, call, &d) < 0)
        return ERR_INVALID;
    out->inject = d.inject;
    if (!d.inject)
        return 0;
    out->fault_index = d.fault_index;
    snprintf(out->kind, sizeof(out->kind), "%s", d.kind ? d.kind : "");
    out->options = json_incref(d.options);
    out->call_index = d.call_index;
    out->safety = plan_fault_mutating(x->plan, d.fault_index);
    return 0;
}

/* Standalone events are stamped now and handed to the writer thread from seam_flush, after
 * the component has sent what its peers waited for: writing them is off the round trip. */
static void sa_emit(struct seam *x, json_t *ev)
{
    events_stamp(ev);
    json_array_append(x->queue, ev);
    if (json_array_size(x->queue) >= POST_MAX)
        seam_flush(x);
}

/* The queue goes to the writer thread (evwriter.h): appending it is not done here. */
static void sa_flush(struct seam *x)
{
    if (json_array_size(x->queue) == 0)
        return;
    seam_evwriter_push(x->evw, x->queue);
    json_array_clear(x->queue);
}

/* ---- controller ---- */

static int64_t mono_ms(void)
{
    return time_mono_ns() / 1000000;
}

/* Appends line (serialized on the caller's thread) to the sender's queue; takes ownership of
 * line. Wakes the sender only when a batch is full: otherwise seam_flush does, from the
 * component's idle hook, so that events go in batches. */
static void ct_push(struct seam *x, char *line)
{
    struct ct_sender *s = &x->snd;

    pthread_mutex_lock(&s->mu);
    seam_outq_push(&s->q, line);
    if (s->q.len >= POST_MAX) {
        s->wake = 1;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A warning event as a serialized line (caller frees; NULL if it cannot be made). Called on
 * either thread: the jansson value is made and freed here. */
static char *warning_line(const char *component, const char *code, const char *msg)
{
    json_t *ev = ev_new(EVKIND_WARNING);
    char *line;

    ev_set_str(ev, "src", component);
    ev_set_str(ev, "code", code);
    ev_set_str(ev, "message", msg);
    line = json_dumps(ev, JSON_COMPACT);

    json_decref(ev);
    return line;
}

static int ct_decide(struct seam *x, const struct plan_call *call, struct seam_decision *out)
{
    struct ct_sender *s = &x->snd;
    struct err e = {0};
    json_t *reply = NULL, *v;
    const char *kind, *can;
    int allow, tripped = 0, rc;

    pthread_mutex_lock(&s->mu);
    allow = seam_breaker_allow(&s->br);
    pthread_mutex_unlock(&s->mu);
    if (!allow)
        return ERR_TIMEOUT; /* the breaker is open: no wait; the session warns (counted) */
    rc = seam_client_decide(x->cc, call, &reply, &e);
    if (rc < 0) {
        if (rc == ERR_TIMEOUT || rc == ERR_IO) {
            pthread_mutex_lock(&s->mu);
            tripped = seam_breaker_trip(&s->br, mono_ms());
            pthread_cond_signal(&s->cv); /* the sender probes from now on */
            pthread_mutex_unlock(&s->mu);
        }
        log_warn(x->component, "decide: %s", e.msg);
        if (tripped) {
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "no decision from the controller within %d ms (%s): calls go through "
                     "unfaulted, without asking, until it answers again",
                     x->decide_ms, e.msg);
            char *line = warning_line(x->component, "controller_slow", msg);
            if (line)
                ct_push(x, line);
        }
        return e.code ? e.code : ERR_IO;
    }
    v = json_object_get(reply, "mutating_faults");
    if (json_is_boolean(v))
        x->mutating_ok = json_is_true(v); /* the controller's latest word (seam.h) */
    can = json_string_value(json_object_get(reply, "canary"));
    if (can && (x->canary == NULL || strcmp(x->canary, can) != 0)) {
        free(x->canary);
        x->canary = xstrdup(can);
    }
    out->inject = json_is_true(json_object_get(reply, "inject"));
    if (out->inject) {
        kind = json_string_value(json_object_get(reply, "kind"));
        if (kind == NULL) {
            json_decref(reply);
            log_warn(x->component, "decide: the controller said inject without a kind");
            return ERR_PROTO;
        }
        snprintf(out->kind, sizeof(out->kind), "%s", kind);
        v = json_object_get(reply, "fault_index");
        out->fault_index = json_is_integer(v) ? (size_t)json_integer_value(v) : 0;
        v = json_object_get(reply, "call_index");
        out->call_index = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
        v = json_object_get(reply, "options");
        out->options = json_is_object(v) ? json_incref(v) : NULL;
        out->safety = -1;
    }
    json_decref(reply);
    return 0;
}

static void ct_emit(struct seam *x, json_t *ev)
{
    char *line;

    /* The caller does not touch ev again (seam.h): stamp it and serialize it here; the
     * sender thread only ever sees text. */
    events_stamp(ev);
    if (json_object_get(ev, "src") == NULL)
        json_object_set_new(ev, "src", json_string(x->component));
    {
        struct buf b = BUF_INIT;
        if (events_dump(ev, &b) < 0) { /* raw values (events.h) as their text */
            buf_release(&b);
            log_warn(x->component, "cannot serialize an event");
            return;
        }
        line = buf_detach(&b, NULL);
    }
    ct_push(x, line);
}

/* Sets the sender's request timeouts, capped by the exit deadline once there is one. */
static void sender_limits(struct ct_sender *s, int connect_ms, int io_ms)
{
    if (s->stop) {
        int64_t left = s->stop_deadline_ms - mono_ms();
        if (left < 1)
            left = 1;
        if (connect_ms > left)
            connect_ms = (int)left;
        if (io_ms > left)
            io_ms = (int)left;
    }
    seam_client_set_limits(s->cc, connect_ms, io_ms, 0);
}

/* Builds the next batch into b ("[...]") from the queue, led by an events_dropped warning
 * when events were lost since the last one. Returns how many events it holds. */
static size_t sender_batch(struct ct_sender *s, struct buf *b)
{
    uint64_t lost = s->q.dropped + s->lost;
    size_t n = 0;

    buf_reset(b);
    buf_addc(b, '[');
    if (lost > s->reported) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "%llu events were dropped: the controller did not take them (or did not "
                 "confirm it)",
                 (unsigned long long)(lost - s->reported));
        char *line = warning_line(s->component, "events_dropped", msg);
        s->reported = lost;
        if (line && buf_adds(b, line) == 0)
            n++;
        free(line);
    }
    n += seam_outq_take(&s->q, POST_MAX - n, b);
    buf_addc(b, ']');
    return n;
}

/* The sender thread. Posts batches of queued lines when woken; after a failed post it waits
 * for a health probe to pass before posting again (events stay queued, rather than being lost
 * batch after batch, while the controller does not answer); probes while the decision breaker
 * is open and closes it when the controller answers. Holds s->mu except around requests. */
static void *sender_main(void *arg)
{
    struct ct_sender *s = arg;
    struct buf batch = BUF_INIT;
    size_t held = 0;      /* events in batch: a post that failed before sending keeps them */
    int healthy = 1;      /* the last post or probe went through */
    int64_t next_try = 0; /* when !healthy: the next probe */
    unsigned failures = 0;
    struct err e = {0};

    pthread_mutex_lock(&s->mu);
    for (;;) {
        int64_t now = mono_ms();
        if (s->stop && now >= s->stop_deadline_ms)
            break;
        int probe = seam_breaker_probe_due(&s->br, now);
        if (!healthy && now >= next_try)
            probe = 1;
        if (probe) {
            json_t *h = NULL;
            sender_limits(s, PROBE_TIMEOUT_MS, PROBE_TIMEOUT_MS);
            pthread_mutex_unlock(&s->mu);
            int ok = seam_client_health(s->cc, &h, &e) == 0;
            json_decref(h); /* made and freed on this thread */
            pthread_mutex_lock(&s->mu);
            err_clear(&e);
            if (!ok) {
                next_try = mono_ms() + s->br.probe_ms;
                continue;
            }
            healthy = 1;
            if (s->br.open) {
                char msg[160];
                snprintf(msg, sizeof(msg),
                         "the controller answers again; %llu calls went through unfaulted "
                         "without asking meanwhile",
                         (unsigned long long)seam_breaker_reset(&s->br));
                char *line = warning_line(s->component, "controller_slow", msg);
                if (line)
                    seam_outq_push(&s->q, line);
            }
            continue;
        }
        int pending = held > 0 || s->q.len > 0 || s->q.dropped + s->lost > s->reported;
        /* While the breaker is open the controller is not answering: a post would most likely
         * be lost after sending, so events wait in the queue for the probe. */
        if (healthy && !s->br.open && pending && (s->wake || s->stop || held > 0)) {
            s->wake = 0;
            if (held == 0)
                held = sender_batch(s, &batch);
            sender_limits(s, s->connect_ms, s->io_ms);
            pthread_mutex_unlock(&s->mu);
            int rc = seam_client_post_events_text(s->cc, batch.data, batch.len, &e);
            int sent = seam_client_sent(s->cc);
            pthread_mutex_lock(&s->mu);
            if (rc == 0) {
                held = 0;
                failures = 0;
                continue;
            }
            if (failures++ < 5)
                log_warn(s->component, "cannot send events to the controller: %s", e.msg);
            err_clear(&e);
            if (sent) {
                /* The controller may have appended them: sending them again could record a
                 * call twice (a false duplicate for scoring), so they count as dropped. */
                s->lost += held;
                held = 0;
            }
            healthy = 0;
            next_try = mono_ms() + s->br.probe_ms;
            continue;
        }
        if (s->stop && !pending)
            break;
        /* Nothing to do now: sleep until woken, the next probe or the exit deadline. */
        int64_t wait = -1, bw = seam_breaker_wait_ms(&s->br, now);
        if (!healthy)
            wait = next_try > now ? next_try - now : 0;
        if (bw != SEAM_BREAKER_CLOSED && (wait < 0 || bw < wait))
            wait = bw;
        if (s->stop && (wait < 0 || s->stop_deadline_ms - now < wait))
            wait = s->stop_deadline_ms - now;
        if (wait < 0) {
            pthread_cond_wait(&s->cv, &s->mu);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (long)(wait % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        }
    }
    s->unsent = held + s->q.len;
    pthread_mutex_unlock(&s->mu);
    buf_release(&batch);
    return NULL;
}

static int sender_start(struct ct_sender *s, const char *url, struct err *e)
{
    pthread_condattr_t ca;

    s->cc = seam_client_new(url, e);
    if (s->cc == NULL)
        return e->code;
    seam_outq_init(&s->q, QUEUE_MAX);
    seam_breaker_init(&s->br, PROBE_MS);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->inited = 1;
    /* Signals are the caller's (the shim: libevent's handlers, on the main thread): the sender
     * blocks them all, so none interrupts or is handled on it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->th, NULL, sender_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return err_set(e, ERR_SYS, "cannot start the event sender thread");
    s->started = 1;
    return 0;
}

/* Has the sender post what is queued within FLUSH_MS, joins it and frees it. */
static void sender_stop(struct ct_sender *s)
{
    if (!s->inited)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        s->stop_deadline_ms = mono_ms() + FLUSH_MS;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
        uint64_t lost = s->q.dropped + s->lost - s->reported;
        if (s->unsent > 0 || lost > 0)
            log_warn(s->component,
                     "%zu events could not be sent to the controller before exit (%llu more "
                     "were dropped)",
                     s->unsent, (unsigned long long)lost);
    }
    seam_outq_release(&s->q);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    seam_client_free(s->cc);
    s->cc = NULL;
    s->inited = 0;
}

/* ---- both ---- */

int seam_decide(struct seam *x, const struct plan_call *call, struct seam_decision *out)
{
    memset(out, 0, sizeof(*out));
    return x->cc ? ct_decide(x, call, out) : sa_decide(x, call, out);
}

int seam_records(const struct seam *x)
{
    return x->records;
}

int seam_decide_reads_args(const struct seam *x)
{
    json_t *f;
    size_t i;

    if (x->cc != NULL)
        return 1; /* the controller decides: it reads what it is sent */
    if (x->plan == NULL)
        return 0;
    json_array_foreach(json_object_get(x->plan_json, "faults"), i, f)
    {
        json_t *when = json_object_get(f, "when");
        if (when != NULL && !json_is_null(when)) /* plan_to_json writes "when": null */
            return 1;
    }
    return 0;
}

void seam_emit(struct seam *x, json_t *ev)
{
    if (ev == NULL)
        return;
    ev_assert_listed(ev); /* built with ev_new: nothing the events table does not list */
    if (!x->records)
        return;
    if (x->cc)
        ct_emit(x, ev);
    else
        sa_emit(x, ev);
}

void seam_flush(struct seam *x)
{
    if (x == NULL)
        return;
    if (x->ew) {
        sa_flush(x);
        return;
    }
    if (x->snd.started) { /* the sender posts what is queued; nothing here waits for it */
        pthread_mutex_lock(&x->snd.mu);
        if (x->snd.q.len > 0 || x->snd.q.dropped + x->snd.lost > x->snd.reported) {
            x->snd.wake = 1;
            pthread_cond_signal(&x->snd.cv);
        }
        pthread_mutex_unlock(&x->snd.mu);
    }
}

int seam_mutating_allowed(const struct seam *x)
{
    return x->mutating_ok;
}

const char *seam_canary(struct seam *x)
{
    if (x->cc)
        return x->canary;
    return x->plan ? plan_canary(x->plan) : NULL;
}

json_t *seam_plan_faults(struct seam *x)
{
    return json_object_get(x->plan_json, "faults");
}

int seam_select(struct seam *x, size_t fault_index, const char *key, uint64_t index,
                double probability)
{
    return plan_select(x->seed, fault_index, key, index, probability);
}

static void emit_plan_loaded(struct seam *x, const char *path)
{
    json_t *ev = ev_new(EVKIND_PLAN_LOADED);
    json_t *faults = json_object_get(x->plan_json, "faults");
    json_t *faulted = json_object_get(x->plan_json, "faulted");
    json_t *inj = json_array();
    size_t i;
    json_t *f;

    ev_set_str(ev, "component", x->component);
    ev_set_str(ev, "plan", path ? path : "");
    ev_set_int(ev, "pid", (long long)getpid());
    ev_set_bool(ev, "faulted", faulted ? json_is_true(faulted) : json_array_size(faults) > 0);
    ev_set_int(ev, "faults", (long long)json_array_size(faults));
    json_array_foreach(faults, i, f)
    {
        size_t j;
        json_t *name;
        json_array_foreach(json_object_get(f, "injectors"), j, name)
        {
            int seen = 0;
            size_t k;
            json_t *have;
            json_array_foreach(inj, k, have) seen |= json_equal(have, name);
            if (!seen)
                json_array_append(inj, name);
        }
    }
    ev_set(ev, "injectors", inj);
    /* the plan's informational parts are not validated: only strings are written */
    ev_set_str(ev, "canary", json_string_value(json_object_get(x->plan_json, "canary")));
    ev_set_str(
        ev, "experiment",
        json_string_value(json_object_get(json_object_get(x->plan_json, "experiment"), "hash")));
    seam_emit(x, ev);
    json_decref(ev);
}

/* The decision deadline: o->decide_ms, else FAULTLINE_CONTROL_DECIDE_MS, else DECIDE_MS. */
static int decide_ms_of(const struct seam_opts *o)
{
    const char *env = getenv("FAULTLINE_CONTROL_DECIDE_MS");
    uint64_t v = 0;

    if (o->decide_ms > 0)
        return o->decide_ms > DECIDE_MS_MAX ? DECIDE_MS_MAX : o->decide_ms;
    if (env && *env) {
        if (num_parse_u64(env, &v) == 0 && v > 0 && v <= DECIDE_MS_MAX)
            return (int)v;
        log_warn(o->component, "FAULTLINE_CONTROL_DECIDE_MS '%s' is not 1..%d: using %d ms", env,
                 DECIDE_MS_MAX, DECIDE_MS);
    }
    return DECIDE_MS;
}

/* Controller mode: the client, the sender, the health check. Not reaching the controller is
 * not fatal: the component must work even when the controller is late or gone. */
static int ct_open(struct seam *x, const struct seam_opts *o, struct err *e)
{
    json_t *health = NULL;
    int hrc;

    x->cc = seam_client_new(o->control_url, e);
    if (x->cc == NULL)
        return e->code;
    x->decide_ms = decide_ms_of(o);
    x->snd.connect_ms = EVENTS_CONNECT_MS;
    x->snd.io_ms = EVENTS_IO_MS;
    x->snd.component = x->component;
    x->records = 1;
    if (x->plan && plan_canary(x->plan))
        x->canary = xstrdup(plan_canary(x->plan));
    if (sender_start(&x->snd, o->control_url, e) < 0)
        return e->code;
    seam_client_set_limits(x->cc, HEALTH_MS, HEALTH_MS, 0);
    hrc = seam_client_health(x->cc, &health, e);
    x->mutating_ok = hrc == 0 && json_is_true(json_object_get(health, "mutating_faults"));
    json_decref(health);
    /* Decisions wait for decide_ms for the answer (and as long again to connect, when a new
     * connection is needed); then the call goes on. */
    seam_client_set_limits(x->cc, x->decide_ms, x->decide_ms, 0);
    if (hrc < 0) {
        /* Until the sender's probe finds it answering, calls are not held up asking. */
        log_warn(x->component, "controller health check: %s", e->msg);
        if (hrc == ERR_TIMEOUT || hrc == ERR_IO) {
            pthread_mutex_lock(&x->snd.mu);
            seam_breaker_trip(&x->snd.br, mono_ms());
            pthread_cond_signal(&x->snd.cv);
            pthread_mutex_unlock(&x->snd.mu);
        }
        err_clear(e);
    } else {
        emit_plan_loaded(x, o->plan_path ? o->plan_path : o->control_url);
    }
    return 0;
}

struct seam *seam_new(const struct seam_opts *o, struct err *e)
{
    struct seam *x = xcalloc(1, sizeof(*x));

    x->component = o->component ? o->component : "seam";
    /* One plan reader, validated, in both modes. In controller mode the plan never decides
     * (the counters live in the controller): it tells only what is decided outside calls. */
    if (o->plan_path) {
        x->plan = plan_load(o->plan_path, e);
        if (x->plan == NULL)
            goto fail;
        x->plan_json = plan_to_json(x->plan);
        x->seed = plan_seed(x->plan);
    }
    x->mutating_ok = o->control_url == NULL && o->i_have_a_sandbox;
    if (o->control_url) {
        if (ct_open(x, o, e) < 0)
            goto fail;
        return x;
    }
    if (o->events_path) {
        x->queue = json_array();
        x->ew = events_open(o->events_path, x->plan ? plan_run_id(x->plan) : "standalone",
                            x->component, e);
        if (x->ew == NULL)
            goto fail;
        x->evw = seam_evwriter_new(x->ew, x->component);
        x->records = 1;
    }
    if (x->plan && x->records)
        emit_plan_loaded(x, o->plan_path);
    return x;
fail:
    seam_free(x);
    return NULL;
}

void seam_end(struct seam *x, const char *server, int failed)
{
    json_t *ev = ev_new(EVKIND_COMPONENT_END);

    ev_set_str(ev, "component", x->component);
    ev_set_int(ev, "pid", (long long)getpid());
    if (server)
        ev_set_str(ev, "server", server);
    ev_set_str(ev, "reason", failed ? "error" : "end");
    seam_emit(x, ev);
    json_decref(ev);
}

void seam_free(struct seam *x)
{
    if (x == NULL)
        return;
    seam_flush(x);
    seam_evwriter_free(x->evw); /* what was handed over is written before the file closes */
    sender_stop(&x->snd);
    json_decref(x->queue);
    seam_client_free(x->cc);
    events_close(x->ew);
    plan_free(x->plan);
    json_decref(x->plan_json);
    free(x->canary);
    free(x);
}
