/*
 * evwriter: see evwriter.h.
 *
 * Shared state (struct seam_evwriter's todo, sleeping, stop) is under mu, never held while
 * writing. The thread's loop:
 *
 *   todo not empty  take it (an empty array takes its place), write it unlocked, put it on
 *                   done (the caller's thread frees it at its next push: the events were
 *                   allocated there, and a free in another thread's arena contends for its
 *                   lock), signal room
 *   stop            end (after the last batch)
 *   else            nap NAP_MS on wake; after LINGER_MS of naps with nothing, sleep on wake
 *                   (sleeping = 1) until push or free signals it
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "seam/evwriter.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/banned.h"

#if !JANSSON_THREAD_SAFE_REFCOUNT
#error "the events writer thread shares jansson values: it needs atomic reference counts"
#endif

#define NAP_MS 1
#define LINGER_MS 20
#define WAKE_AT 64
#define MAX_PENDING 1024

struct seam_evwriter {
    struct events_writer *ew;
    const char *component;
    pthread_t th;
    int started, failed; /* failed: no thread, push writes itself */
    pthread_mutex_t mu;
    pthread_cond_t wake, room;
    json_t *todo; /* events handed over, in order */
    json_t *done; /* batches written, for the caller's thread to free (their memory is its) */
    int sleeping; /* the thread waits on wake without a timeout */
    int stop;
};

/* Appends the events of batch in one write(2). */
static void write_batch(struct seam_evwriter *w, json_t *batch)
{
    size_t i;
    json_t *ev;

    events_hold(w->ew);
    json_array_foreach(batch, i, ev)
    {
        if (events_append(w->ew, ev) < 0)
            log_warn(w->component, "cannot append an event to the events file");
    }
    if (events_release(w->ew) < 0)
        log_warn(w->component, "cannot append events to the events file");
}

static void nap(struct seam_evwriter *w)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += NAP_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->wake, &w->mu, &ts);
}

static void *writer_main(void *arg)
{
    struct seam_evwriter *w = arg;
    int idle = 0; /* naps since the last batch */

    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (json_array_size(w->todo) > 0) {
            json_t *batch = w->todo;
            w->todo = json_array();
            pthread_mutex_unlock(&w->mu);
            write_batch(w, batch);
            pthread_mutex_lock(&w->mu);
            json_array_append_new(w->done, batch); /* freed where it was allocated */
            pthread_cond_broadcast(&w->room);
            idle = 0;
            continue;
        }
        if (w->stop)
            break;
        if (idle < LINGER_MS / NAP_MS) {
            nap(w);
            idle++;
        } else {
            w->sleeping = 1;
            pthread_cond_wait(&w->wake, &w->mu);
            w->sleeping = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct seam_evwriter *seam_evwriter_new(struct events_writer *ew, const char *component)
{
    struct seam_evwriter *w = xcalloc(1, sizeof(*w));
    pthread_condattr_t ca;

    w->ew = ew;
    w->component = component;
    w->todo = json_array();
    w->done = json_array();
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&w->room, NULL);
    return w;
}

/* Starts the thread with every signal blocked (they are the caller's loop's). 0 or ERR_SYS. */
static int writer_start(struct seam_evwriter *w)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->th, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_warn(w->component, "cannot start the events writer thread: events are written on "
                               "the relaying thread");
        w->failed = 1;
        return ERR_SYS;
    }
    w->started = 1;
    return 0;
}

void seam_evwriter_push(struct seam_evwriter *w, json_t *batch)
{
    json_t *done;

    if (json_array_size(batch) == 0)
        return;
    if (!w->started && !w->failed)
        writer_start(w);
    if (w->failed) {
        write_batch(w, batch);
        return;
    }
    pthread_mutex_lock(&w->mu);
    while (json_array_size(w->todo) >= MAX_PENDING)
        pthread_cond_wait(&w->room, &w->mu);
    json_array_extend(w->todo, batch);
    if (w->sleeping || json_array_size(w->todo) >= WAKE_AT)
        pthread_cond_signal(&w->wake);
    done = w->done;
    w->done = json_array_size(done) > 0 ? json_array() : json_incref(done);
    pthread_mutex_unlock(&w->mu);
    json_decref(done); /* the batches written since the last push: freed on this thread */
}

void seam_evwriter_free(struct seam_evwriter *w)
{
    if (w == NULL)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
    }
    json_decref(w->todo);
    json_decref(w->done);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->room);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
