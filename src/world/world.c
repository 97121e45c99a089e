/*
 * world: see world.h. The state is one struct coll per collection (its records, a JSON array,
 * and how many entries it has had, for ids); the ledger is an array of struct world_entry and
 * the calls an array of struct callrec. The dedupe index maps "COLLECTION\x1fVALUE" to the
 * index of the first entry with that dedupe key (a jansson object as the hash table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/jschema.h"
#include "world/world.h"
#include "util/banned.h"

#define KEY_TEXT_MAX 256 /* bytes of a business or dedupe key value kept */

struct tool {
    const char *name, *description; /* borrowed from spec */
    json_t *schema;                 /* borrowed from spec, or NULL */
    struct jschema *js;             /* NULL: any object */
    json_t *result;                 /* borrowed from spec, or NULL */
    const char *collection, *business_key, *dedupe_key, *op, *balance, *reads;
};

struct coll {
    const char *name;
    json_t *records; /* array of objects */
    uint64_t n;      /* entries so far (ids) */
    const char *balance;
};

struct callrec {
    char *tool;
    json_t *args;
    const char *fault;
    enum world_status status;
    size_t first, n; /* its entries */
    int64_t t_ms;
    uint64_t answer; /* hash64 of what the call answered (answer_hash) */
};

struct world {
    json_t *spec; /* a reference: every borrowed string lives here */
    const char *name, *objective;
    int approved, closed;
    long max_calls;      /* 0: none */
    int64_t deadline_ms; /* 0: none */
    int64_t first_t_ms;  /* the first call's time */
    struct tool *tools;
    size_t ntools;
    struct coll *colls;
    size_t ncolls;
    struct world_entry *entries;
    size_t nentries, aentries;
    struct callrec *calls;
    size_t ncalls, acalls;
    json_t *dedupe; /* "COLL\x1fVALUE" -> entry index */
    json_t *first;  /* tool name -> its first successful answer (tool.stale_data) */
    json_t *report;
    size_t closed_after; /* the calls made before the report closed the world */
    struct buf text;     /* the last call's answer as text (world_reply.text) */
    char context_name[96], report_name[96];
};

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static struct coll *coll_find(struct world *w, const char *name)
{
    for (size_t i = 0; i < w->ncolls; i++)
        if (strcmp(w->colls[i].name, name) == 0)
            return &w->colls[i];
    return NULL;
}

static struct coll *coll_add(struct world *w, const char *name)
{
    struct coll *c = coll_find(w, name);
    if (c)
        return c;
    w->colls = xrealloc(w->colls, (w->ncolls + 1) * sizeof(*w->colls));
    c = &w->colls[w->ncolls++];
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->records = json_array();
    return c;
}

struct world *world_new(const json_t *spec, struct err *e)
{
    struct world *w;
    json_t *tools = json_object_get(spec, "tools"), *ini = json_object_get(spec, "initial");
    const char *k;
    json_t *v;

    if (!json_is_object(spec) || !json_is_array(tools) || json_array_size(tools) == 0) {
        err_set(e, ERR_INVALID, "a world needs tools");
        return NULL;
    }
    w = xcalloc(1, sizeof(*w));
    w->spec = json_incref((json_t *)spec);
    w->name = str_of(spec, "name") ? str_of(spec, "name") : "world";
    w->objective = str_of(spec, "objective") ? str_of(spec, "objective") : "";
    w->approved = !json_is_false(json_object_get(spec, "approved"));
    w->max_calls = (long)json_integer_value(json_object_get(spec, "max_calls"));
    w->deadline_ms = (int64_t)json_integer_value(json_object_get(spec, "deadline_s")) * 1000;
    w->dedupe = json_object();
    w->first = json_object();
    buf_init(&w->text, 0);
    snprintf(w->context_name, sizeof(w->context_name), "%s_context", w->name);
    snprintf(w->report_name, sizeof(w->report_name), "%s_report", w->name);
    w->tools = xcalloc(json_array_size(tools), sizeof(*w->tools));
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *t = json_array_get(tools, i), *ef = json_object_get(t, "effect");
        struct tool *tl = &w->tools[w->ntools++];
        char msg[256];
        tl->name = str_of(t, "name");
        if (tl->name == NULL) {
            err_set(e, ERR_INVALID, "tools[%zu]: no name", i);
            goto fail;
        }
        tl->description = str_of(t, "description") ? str_of(t, "description") : "";
        tl->schema = json_object_get(t, "input_schema");
        tl->result = json_object_get(t, "result");
        tl->reads = str_of(t, "reads");
        if (tl->schema && (tl->js = jschema_new(tl->schema, NULL, msg, sizeof(msg))) == NULL) {
            err_set(e, ERR_INVALID, "tools[%zu].input_schema: %s", i, msg);
            goto fail;
        }
        if (ef) {
            tl->collection = str_of(ef, "collection");
            tl->business_key = str_of(ef, "business_key");
            tl->dedupe_key = str_of(ef, "dedupe_key");
            tl->op = str_of(ef, "op") ? str_of(ef, "op") : "append";
            tl->balance = str_of(ef, "balance");
            if (tl->collection == NULL) {
                err_set(e, ERR_INVALID, "tools[%zu].effect: no collection", i);
                goto fail;
            }
            struct coll *c = coll_add(w, tl->collection);
            if (tl->balance)
                c->balance = tl->balance;
        }
        if (tl->reads)
            coll_add(w, tl->reads);
    }
    json_object_foreach(ini, k, v)
    {
        struct coll *c = coll_add(w, k);
        for (size_t i = 0; i < json_array_size(v); i++)
            if (json_is_object(json_array_get(v, i)))
                json_array_append_new(c->records, json_deep_copy(json_array_get(v, i)));
    }
    return w;
fail:
    world_free(w);
    return NULL;
}

void world_free(struct world *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->ntools; i++)
        jschema_free(w->tools[i].js);
    free(w->tools);
    for (size_t i = 0; i < w->ncolls; i++)
        json_decref(w->colls[i].records);
    free(w->colls);
    for (size_t i = 0; i < w->nentries; i++) {
        free(w->entries[i].business_key);
        free(w->entries[i].dedupe_key);
        json_decref(w->entries[i].args);
        json_decref(w->entries[i].result);
    }
    free(w->entries);
    for (size_t i = 0; i < w->ncalls; i++) {
        free(w->calls[i].tool);
        json_decref(w->calls[i].args);
    }
    free(w->calls);
    json_decref(w->dedupe);
    json_decref(w->first);
    json_decref(w->report);
    json_decref(w->spec);
    buf_release(&w->text);
    free(w);
}

const char *world_name(const struct world *w)
{
    return w->name;
}

int world_approved(const struct world *w)
{
    return w->approved;
}

int world_closed(const struct world *w)
{
    return w->closed;
}

static const struct tool *tool_find(const struct world *w, const char *name)
{
    for (size_t i = 0; name && i < w->ntools; i++)
        if (strcmp(w->tools[i].name, name) == 0)
            return &w->tools[i];
    return NULL;
}

int world_has_tool(const struct world *w, const char *name)
{
    return tool_find(w, name) != NULL;
}

const json_t *world_first_result(const struct world *w, const char *name)
{
    return json_object_get(w->first, name);
}

json_t *world_tools_json(const struct world *w)
{
    json_t *a = json_array();
    for (size_t i = 0; i < w->ntools; i++) {
        const struct tool *t = &w->tools[i];
        json_t *s = t->schema ? json_deep_copy(t->schema) : json_pack("{s:s}", "type", "object");
        if (json_object_get(s, "type") == NULL)
            json_object_set_new(s, "type", json_string("object"));
        json_array_append_new(a, json_pack("{s:s,s:s,s:o}", "name", t->name, "description",
                                           t->description, "inputSchema", s));
    }
    json_array_append_new(
        a, json_pack("{s:s,s:s,s:{s:s,s:{}}}", "name", w->context_name, "description",
                     "The objective of this task and the contract of the tools (which calls "
                     "change what, and which argument deduplicates a repeated call).",
                     "inputSchema", "type", "object", "properties"));
    json_array_append_new(
        a, json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s}}}}", "name", w->report_name, "description",
                     "Your final report of what you did. Call it once, at the end: it closes the "
                     "world, and no tool changes anything afterwards.",
                     "inputSchema", "type", "object", "properties", "summary", "type", "string"));
    return a;
}

json_t *world_context_json(const struct world *w)
{
    json_t *tools = json_array();
    for (size_t i = 0; i < w->ntools; i++) {
        const struct tool *t = &w->tools[i];
        json_t *o = json_pack("{s:s,s:s}", "name", t->name, "description", t->description);
        if (t->collection) {
            json_t *ef = json_pack("{s:s,s:s}", "collection", t->collection, "op", t->op);
            if (t->business_key)
                json_object_set_new(ef, "business_key", json_string(t->business_key));
            if (t->dedupe_key)
                json_object_set_new(ef, "dedupe_key", json_string(t->dedupe_key));
            json_object_set_new(o, "effect", ef);
        } else if (t->reads) {
            json_object_set_new(o, "reads", json_string(t->reads));
        }
        json_array_append_new(tools, o);
    }
    return json_pack("{s:s,s:s,s:b,s:o,s:s}", "world", w->name, "objective", w->objective,
                     "approved", w->approved, "tools", tools, "report",
                     "call the report tool once, at the end");
}

/* The text of argument key of args (a string as it is, other scalars as JSON), or NULL. */
static char *key_text(const json_t *args, const char *key)
{
    json_t *v = key ? json_object_get(args, key) : NULL;
    char *s;
    if (v == NULL || json_is_null(v) || json_is_object(v) || json_is_array(v))
        return NULL;
    if (json_is_string(v))
        return xstrndup(json_string_value(v), json_string_length(v) < KEY_TEXT_MAX
                                                  ? json_string_length(v)
                                                  : KEY_TEXT_MAX);
    s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    return s ? s : xstrdup("?");
}

static void fail_with(struct world_reply *out, enum world_status st, const char *code,
                      const char *fmt, const char *a, const char *b)
{
    char m[400];
    out->status = st;
    snprintf(m, sizeof(m), fmt, a, b);
    snprintf(out->message, sizeof(out->message), "%s: %s", code, m);
}

static struct callrec *call_add(struct world *w, const struct world_call *c)
{
    if (w->ncalls == w->acalls) {
        w->acalls = w->acalls ? w->acalls * 2 : 64;
        w->calls = xrealloc(w->calls, w->acalls * sizeof(*w->calls));
    }
    struct callrec *r = &w->calls[w->ncalls++];
    memset(r, 0, sizeof(*r));
    r->tool = xstrdup(c->tool ? c->tool : "");
    /* shared, not copied: nothing changes a call's arguments once they are parsed (the server
     * borrows them from the request, the replay from the ledger it read) */
    r->args = c->args ? json_incref(c->args) : json_object();
    r->fault = c->fault;
    r->t_ms = c->t_ms;
    r->first = w->nentries;
    return r;
}

/* record_find's "no such record": an index no array has, not an error code. */
#define RECORD_NONE (-2L)

static long record_find(const struct coll *c, const char *bk_name, const char *bk)
{
    for (size_t i = 0; i < json_array_size(c->records); i++) {
        char *t = key_text(json_array_get(c->records, i), bk_name);
        int same = t && strcmp(t, bk) == 0;
        free(t);
        if (same)
            return (long)i;
    }
    return RECORD_NONE;
}

/* One delivery of an effect call. */
static void apply(struct world *w, const struct tool *t, const struct world_call *c, json_t *args,
                  struct world_reply *out)
{
    struct coll *col = coll_find(w, t->collection);
    char *bk = key_text(args, t->business_key), *dk = key_text(args, t->dedupe_key);
    char dkey[2 * KEY_TEXT_MAX + 80];
    json_t *prior = NULL, *result;
    long rec = RECORD_NONE;

    if (w->nentries >= WORLD_EFFECTS_MAX) {
        fail_with(out, WORLD_FULL, "LEDGER_FULL", "the ledger holds %s entries%s", "100000", "");
        goto done;
    }
    if (dk) {
        snprintf(dkey, sizeof(dkey), "%s\x1f%s", t->collection, dk);
        prior = json_object_get(w->dedupe, dkey);
        if (prior) {
            const struct world_entry *first = &w->entries[json_integer_value(prior)];
            if (!json_equal(first->args, args)) {
                fail_with(out, WORLD_CONFLICT, "IDEMPOTENCY_CONFLICT",
                          "%s '%.200s' was already used with other arguments", t->dedupe_key, dk);
                goto done;
            }
        }
    }
    if (!prior && strcmp(t->op, "append") != 0) {
        rec = bk ? record_find(col, t->business_key, bk) : RECORD_NONE;
        if (rec == RECORD_NONE) {
            fail_with(out, WORLD_NOT_FOUND, "NOT_FOUND", "no record of %s with that %s",
                      t->collection, t->business_key);
            goto done;
        }
    }
    if (w->nentries == w->aentries) {
        w->aentries = w->aentries ? w->aentries * 2 : 64;
        w->entries = xrealloc(w->entries, w->aentries * sizeof(*w->entries));
    }
    struct world_entry *en = &w->entries[w->nentries];
    memset(en, 0, sizeof(*en));
    en->call = w->ncalls;
    en->tool = t->name;
    en->collection = t->collection;
    en->op = t->op;
    en->business_key = bk;
    en->dedupe_key = dk;
    bk = dk = NULL;
    en->args = json_incref(args); /* the call's own, shared (call_add) */
    en->t_ms = c->t_ms;
    en->fault = c->fault;
    en->approved = w->approved;
    if (prior) {
        const struct world_entry *first = &w->entries[json_integer_value(prior)];
        en->deduplicated = 1;
        snprintf(en->id, sizeof(en->id), "%s", first->id);
        en->result = json_incref(first->result); /* results are never changed once made */
        w->nentries++;
        out->status = WORLD_OK;
        goto done;
    }
    col->n++;
    snprintf(en->id, sizeof(en->id), "%.20s-%llu", t->collection, (unsigned long long)col->n);
    if (strcmp(t->op, "append") == 0) {
        /* a shallow copy: the record gets its own effect_id, its values are the arguments'
         * (a record is changed only by update's merge, which replaces values, never edits
         * one; whoever changes an answer made of records changes a deep copy, serve.c) */
        json_t *r = json_copy(args);
        json_object_set_new(r, "effect_id", json_string(en->id));
        json_array_append_new(col->records, r);
        rec = (long)json_array_size(col->records) - 1;
    } else if (strcmp(t->op, "update") == 0) {
        json_t *r = json_array_get(col->records, (size_t)rec);
        json_object_update(r, args);
        json_object_set_new(r, "effect_id", json_string(en->id));
    }
    if (t->result && json_is_object(t->result)) {
        result = json_copy(t->result); /* the spec's values, shared: only effect_id is added */
        json_object_set_new(result, "effect_id", json_string(en->id));
    } else if (t->result) {
        result = json_deep_copy(t->result);
    } else {
        result = json_pack("{s:s,s:s,s:s}", "effect_id", en->id, "collection", t->collection, "op",
                           t->op);
        if (strcmp(t->op, "delete") != 0)
            json_object_set_new(result, "record", /* the record as it is now: a later update
                                                     replaces its values, never edits one */
                                json_copy(json_array_get(col->records, (size_t)rec)));
    }
    if (strcmp(t->op, "delete") == 0)
        json_array_remove(col->records, (size_t)rec);
    en->result = result;
    if (en->dedupe_key) {
        snprintf(dkey, sizeof(dkey), "%s\x1f%s", t->collection, en->dedupe_key);
        json_object_set_new(w->dedupe, dkey, json_integer((json_int_t)w->nentries));
    }
    w->nentries++;
    out->status = WORLD_OK;
done:
    free(bk);
    free(dk);
}

static json_t *read_result(const struct world *w, const struct tool *t)
{
    const struct coll *c = coll_find((struct world *)w, t->reads);
    json_t *r = json_pack("{s:s,s:O}", "collection", t->reads, "records", c->records);
    if (c->balance) {
        double sum = 0;
        for (size_t i = 0; i < json_array_size(c->records); i++)
            sum += json_number_value(json_object_get(json_array_get(c->records, i), c->balance));
        json_object_set_new(r, "balance", json_real(sum));
    }
    if (t->result && json_is_object(t->result))
        json_object_update_missing(r, t->result);
    return r;
}

static int text_cb(const char *p, size_t n, void *data)
{
    return buf_add(data, p, n);
}

/* What a call answered, as a hash a replay compares: the result's compact JSON (sorted keys),
 * dumped once into w->text (the server shows the same text: world_reply.text), when it
 * succeeded, else its message. */
static uint64_t answer_hash(struct world *w, struct world_reply *out)
{
    buf_reset(&w->text);
    if (out->status == WORLD_OK && out->result &&
        json_dump_callback(out->result, text_cb, &w->text,
                           JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY |
                               JSON_REAL_PRECISION(17)) == 0) {
        out->text = w->text.data;
        out->text_len = w->text.len;
        return hash64(w->text.data, w->text.len, 0);
    }
    return hash64(out->message, strlen(out->message), 0);
}

void world_call(struct world *w, const struct world_call *c, struct world_reply *out)
{
    const struct tool *t = tool_find(w, c->tool);
    json_t *empty = NULL, *args = c->args;
    struct callrec *rec;
    char msg[300];

    memset(out, 0, sizeof(*out));
    out->first_entry = w->nentries;
    if (w->ncalls >= WORLD_CALLS_MAX) {
        fail_with(out, WORLD_FULL, "LEDGER_FULL", "the world took %s calls%s", "1000000", "");
        return;
    }
    if (w->ncalls == 0)
        w->first_t_ms = c->t_ms;
    rec = call_add(w, c);
    if (args == NULL)
        args = empty = json_object();
    if (t == NULL) {
        fail_with(out, WORLD_NO_TOOL, "UNKNOWN_TOOL", "no tool '%.100s' in world %.64s", c->tool,
                  w->name);
    } else if (c->mode == WORLD_FAULT_WITHHELD) {
        /* the fault answers (serve.c): the world never sees the call, like a server behind
         * the shim */
        out->status = WORLD_WITHHELD;
        snprintf(out->message, sizeof(out->message), "withheld by a fault");
    } else if (!json_is_object(args)) {
        fail_with(out, WORLD_INVALID_ARGS, "INVALID_ARGUMENTS",
                  "the arguments must be an object%s%s", "", "");
    } else if (t->js && jschema_check(t->js, args, msg, sizeof(msg)) < 0) {
        fail_with(out, WORLD_INVALID_ARGS, "INVALID_ARGUMENTS", "%s%s", msg, "");
    } else if (w->max_calls > 0 && (long)w->ncalls > w->max_calls) {
        fail_with(out, WORLD_BUDGET, "BUDGET_EXCEEDED", "the world answers at most %s calls%s",
                  "max_calls", "");
    } else if (w->deadline_ms > 0 && c->t_ms - w->first_t_ms > w->deadline_ms) {
        char late[48];
        snprintf(late, sizeof(late), "%lld", (long long)(w->deadline_ms / 1000));
        fail_with(out, WORLD_BUDGET, "BUDGET_EXCEEDED",
                  "the world's deadline_s (%s s since the first call) has passed%s", late, "");
    } else if (t->reads) {
        out->status = WORLD_OK;
        out->result = read_result(w, t);
    } else if (t->collection == NULL) {
        out->status = WORLD_OK;
        out->result = t->result ? json_deep_copy(t->result) : json_object();
    } else if (w->closed) {
        fail_with(out, WORLD_CLOSED, "WORLD_CLOSED",
                  "%s was called: the world takes no further effects%s", w->report_name, "");
    } else if (c->mode == WORLD_FAULT_TIMEOUT_BEFORE) {
        out->status = WORLD_TIMEOUT;
        snprintf(out->message, sizeof(out->message), "Request timed out");
    } else {
        int copies = c->mode == WORLD_FAULT_DUPLICATE ? (c->copies >= 2 ? c->copies : 2) : 1;
        size_t first = w->nentries;
        apply(w, t, c, args, out);
        for (int i = 1; i < copies && out->status == WORLD_OK; i++) {
            struct world_reply again;
            memset(&again, 0, sizeof(again));
            apply(w, t, c, args, &again); /* a conflict cannot happen: same arguments */
        }
        if (out->status == WORLD_OK && w->nentries > first)
            out->result = json_incref(w->entries[first].result);
        if (out->status == WORLD_OK && c->mode == WORLD_FAULT_TIMEOUT_AFTER) {
            json_decref(out->result);
            out->result = NULL;
            out->status = WORLD_TIMEOUT;
            snprintf(out->message, sizeof(out->message), "Request timed out");
        }
    }
    if (out->status == WORLD_OK && t && out->result && !json_object_get(w->first, t->name))
        json_object_set_new(w->first, t->name, json_deep_copy(out->result));
    rec->status = out->status;
    rec->answer = answer_hash(w, out);
    rec->n = w->nentries - rec->first;
    json_decref(empty);
}

void world_report(struct world *w, const json_t *report)
{
    json_decref(w->report);
    w->report = report ? json_deep_copy(report) : json_object();
    if (!w->closed)
        w->closed_after = w->ncalls;
    w->closed = 1;
}

size_t world_ncalls(const struct world *w)
{
    return w->ncalls;
}

size_t world_nentries(const struct world *w)
{
    return w->nentries;
}

const struct world_entry *world_entry(const struct world *w, size_t i)
{
    return i < w->nentries ? &w->entries[i] : NULL;
}

json_t *world_snapshot_json(const struct world *w)
{
    json_t *colls = json_object(), *bal = json_object();
    for (size_t i = 0; i < w->ncolls; i++) {
        const struct coll *c = &w->colls[i];
        json_object_set_new(colls, c->name, json_deep_copy(c->records));
        if (c->balance) {
            double sum = 0;
            for (size_t k = 0; k < json_array_size(c->records); k++)
                sum +=
                    json_number_value(json_object_get(json_array_get(c->records, k), c->balance));
            json_object_set_new(bal, c->name, json_real(sum));
        }
    }
    return json_pack("{s:o,s:o}", "collections", colls, "balances", bal);
}

static const char *status_name(enum world_status s)
{
    static const char *const names[] = {"ok",      "invalid_arguments", "idempotency_conflict",
                                        "closed",  "budget_exceeded",   "ledger_full",
                                        "no_tool", "timeout",           "not_found",
                                        "withheld"};
    return (size_t)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* The ledger; own: its values are its own (a call's arguments are shared by the call and its
 * entries in the world: a caller that edits one must not edit the other), else shared with
 * the world's (world_ledger_save dumps them at once). */
static json_t *ledger_json(const struct world *w, int own)
{
    json_t *calls = json_array(), *effects = json_array();
    char answer[17];
    for (size_t i = 0; i < w->ncalls; i++) {
        const struct callrec *r = &w->calls[i];
        json_t *o = json_pack("{s:I,s:s,s:o,s:s,s:I,s:I}", "call", (json_int_t)(i + 1), "tool",
                              r->tool, "args", own ? json_deep_copy(r->args) : json_incref(r->args),
                              "outcome", status_name(r->status), "t", (json_int_t)r->t_ms,
                              "effects", (json_int_t)r->n);
        if (r->fault)
            json_object_set_new(o, "fault", json_string(r->fault));
        snprintf(answer, sizeof(answer), "%016llx", (unsigned long long)r->answer);
        json_object_set_new(o, "answer", json_string(answer));
        json_array_append_new(calls, o);
    }
    for (size_t i = 0; i < w->nentries; i++) {
        const struct world_entry *en = &w->entries[i];
        json_t *o =
            json_pack("{s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:b,s:b,s:b}", "call", (json_int_t)en->call,
                      "effect_id", en->id, "tool", en->tool, "collection", en->collection, "op",
                      en->op, "args", own ? json_deep_copy(en->args) : json_incref(en->args),
                      "result", own ? json_deep_copy(en->result) : json_incref(en->result), "t",
                      (json_int_t)en->t_ms, "approved", en->approved, "deduplicated",
                      en->deduplicated, "faulted", en->fault != NULL);
        if (en->business_key)
            json_object_set_new(o, "business_key", json_string(en->business_key));
        if (en->dedupe_key)
            json_object_set_new(o, "dedupe_key", json_string(en->dedupe_key));
        if (en->fault)
            json_object_set_new(o, "fault", json_string(en->fault));
        json_array_append_new(effects, o);
    }
    json_t *l = json_pack("{s:s,s:b,s:b,s:o,s:o,s:o}", "world", w->name, "approved", w->approved,
                          "closed", w->closed, "calls", calls, "effects", effects, "snapshot",
                          world_snapshot_json(w));
    if (w->report)
        json_object_set(l, "report", w->report);
    if (w->closed)
        json_object_set_new(l, "closed_after", json_integer((json_int_t)w->closed_after));
    return l;
}

json_t *world_ledger_json(const struct world *w)
{
    return ledger_json(w, 1);
}

int world_ledger_save(const struct world *w, const char *path, struct err *e)
{
    json_t *l = ledger_json(w, 0);
    char *s = json_dumps(l, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    int rc;

    json_decref(l);
    if (s == NULL)
        return err_set(e, ERR_IO, "cannot serialize the ledger");
    size_t n = strlen(s);
    char *t = xrealloc(s, n + 2);
    t[n] = '\n';
    t[n + 1] = '\0';
    rc = fs_write_file(path, t, n + 1, e);
    free(t);
    return rc;
}
