/* monitor: see monitor.h. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "events/events.h"
#include "events/view.h"
#include "run/monitor.h"
#include "util/banned.h"

int monitor_init(struct monitor *m, const char *path, struct err *e)
{
    memset(m, 0, sizeof(*m));
    m->max_seq = -1;
    if ((size_t)snprintf(m->path, sizeof(m->path), "%s", path) >= sizeof(m->path))
        return err_set(e, ERR_LIMIT, "events path too long");
    return 0;
}

void monitor_release(struct monitor *m)
{
    events_reader_free(m->r);
    m->r = NULL;
}

/* plan_loaded and component_end of the MCP shims, paired by pid */
static void take_shim(struct monitor *m, const struct events_view *v, int end)
{
    long long pid;

    if (!events_view_is(v, "component", "mcp") || events_view_int(v, "pid", &pid) != 0)
        return;
    for (int i = m->nshims - 1; i >= 0; i--) {
        if (m->shims[i].pid == pid && !m->shims[i].ended) {
            m->shims[i].ended = end;
            return;
        }
    }
    if (end || m->nshims >= MONITOR_SHIMS_MAX)
        return;
    m->shims[m->nshims++].pid = pid;
}

int monitor_shims_open(const struct monitor *m, const struct monitor_shim **first)
{
    int n = 0;

    if (first)
        *first = NULL;
    for (int i = 0; i < m->nshims; i++) {
        if (m->shims[i].ended)
            continue;
        if (n++ == 0 && first)
            *first = &m->shims[i];
    }
    return n;
}

static void monitor_take(struct monitor *m, const struct events_view *v)
{
    long long seq;
    double cost;

    m->events++;
    if (events_view_int(v, "seq", &seq) == 0 && seq > m->max_seq)
        m->max_seq = seq;
    if (events_view_is(v, "kind", "model_response")) {
        json_t *u = events_view_get(v, "usage");
        static const char *const in[] = {"input_tokens", "cache_creation_input_tokens",
                                         "cache_read_input_tokens"};
        json_t *n;
        for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
            if (json_is_integer(n = json_object_get(u, in[i])) && json_integer_value(n) > 0)
                m->input_tokens += json_integer_value(n);
        if (json_is_integer(n = json_object_get(u, "output_tokens")) && json_integer_value(n) > 0)
            m->output_tokens += json_integer_value(n);
        json_decref(u);
        if (events_view_number(v, "cost_usd", &cost) == 0 && cost > 0)
            m->cost_usd += cost;
    } else if (events_view_is(v, "kind", "gate_decision") &&
               events_view_is(v, "tier", "destructive"))
        m->destructive = 1;
    else if (events_view_is(v, "kind", "plan_loaded"))
        take_shim(m, v, 0);
    else if (events_view_is(v, "kind", "component_end"))
        take_shim(m, v, 1);
    else if (events_view_is(v, "kind", "abort") && !m->controller_abort) {
        m->controller_abort = 1;
        if (events_view_string(v, "reason", m->controller_reason, sizeof(m->controller_reason),
                               NULL) < 0)
            snprintf(m->controller_reason, sizeof(m->controller_reason), "cost_usd_above");
    }
}

int monitor_poll(struct monitor *m, struct err *e)
{
    struct events_view v;
    struct stat st;
    int rc;

    if (m->r == NULL) {
        if (stat(m->path, &st) != 0)
            return 0;
        if ((m->r = events_reader_open(m->path, e)) == NULL)
            return ERR_IO;
        events_reader_set_follow(m->r, 1);
    }
    while ((rc = events_next_view(m->r, &v)) == 1)
        monitor_take(m, &v);
    if (rc < 0)
        return err_set(e, ERR_IO, "cannot read '%s'", m->path);
    return 0;
}

int monitor_check(const struct monitor *m, const struct experiment_abort *a, double elapsed_s,
                  struct monitor_abort *out)
{
    memset(out, 0, sizeof(*out));
    if (a->destructive_attempt && m->destructive) {
        out->reason = "destructive_attempt";
        snprintf(out->detail, sizeof(out->detail),
                 "a gate decision marked a call as hitting the destructive-command tier");
        return 1;
    }
    if (m->controller_abort || (a->cost_usd_above > 0 && m->cost_usd > a->cost_usd_above)) {
        out->reason = "cost_usd_above";
        out->value = m->cost_usd;
        out->limit = a->cost_usd_above;
        out->by_controller = m->controller_abort;
        snprintf(out->detail, sizeof(out->detail), "summed model cost $%.4f passed the ceiling $%g",
                 m->cost_usd, a->cost_usd_above);
        return 1;
    }
    if (a->wall_clock_s_above > 0 && elapsed_s > a->wall_clock_s_above) {
        out->reason = "wall_clock_s_above";
        out->value = elapsed_s;
        out->limit = a->wall_clock_s_above;
        snprintf(out->detail, sizeof(out->detail), "the agent ran %.1f s, over the limit of %g s",
                 elapsed_s, a->wall_clock_s_above);
        return 1;
    }
    return 0;
}
