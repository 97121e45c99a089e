/*
 * outq: see outq.h. A ring of cap pointers: head is the oldest, len the count.
 */
#include <stdlib.h>
#include <string.h>

#include "seam/outq.h"
#include "util/banned.h"

void seam_outq_init(struct seam_outq *q, size_t cap)
{
    memset(q, 0, sizeof(*q));
    q->cap = cap > 0 ? cap : 1;
    q->items = xcalloc(q->cap, sizeof(*q->items));
}

void seam_outq_release(struct seam_outq *q)
{
    for (size_t i = 0; i < q->len; i++)
        free(q->items[(q->head + i) % q->cap]);
    free(q->items);
    memset(q, 0, sizeof(*q));
}

int seam_outq_push(struct seam_outq *q, char *line)
{
    int dropped = 0;

    if (q->len == q->cap) {
        free(q->items[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->len--;
        q->dropped++;
        dropped = 1;
    }
    q->items[(q->head + q->len) % q->cap] = line;
    q->len++;
    return dropped;
}

size_t seam_outq_take(struct seam_outq *q, size_t max, struct buf *out)
{
    size_t n = 0;

    while (n < max && q->len > 0) {
        char *it = q->items[q->head];
        size_t mark = out->len;
        int sep = out->len > 0 && out->data[out->len - 1] != '[';
        if ((sep && buf_addc(out, ',') < 0) || buf_adds(out, it) < 0) {
            buf_truncate(out, mark);
            break;
        }
        free(it);
        q->items[q->head] = NULL;
        q->head = (q->head + 1) % q->cap;
        q->len--;
        n++;
    }
    return n;
}
