/*
 * seam_gate: the seam's one-call client of the gate endpoint (seam.h, "The gate endpoint"): a
 * seam client (client.h) kept between calls, so the components above the seam never include
 * the client itself.
 */
#include <stdlib.h>

#include "seam/client.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/banned.h"

struct seam_gate {
    struct seam_client *c;
};

struct seam_gate *seam_gate_new(const char *url, struct err *e)
{
    struct seam_client *c = seam_client_new(url, e);
    struct seam_gate *g;

    if (c == NULL)
        return NULL;
    g = xcalloc(1, sizeof(*g));
    g->c = c;
    return g;
}

void seam_gate_free(struct seam_gate *g)
{
    if (g == NULL)
        return;
    seam_client_free(g->c);
    free(g);
}

int seam_gate_post(struct seam_gate *g, const json_t *body, json_t **reply, struct err *e)
{
    return seam_client_post_json(g->c, "/_faultline/gate", body, reply, e);
}
