/* bufs.c - the planned buffers of a step as they are listed (bufs.h). */
#include "bufs.h"

#include <limits.h>
#include <stdio.h>

const char *const bf_buf_kind_names[BF_BUF_KINDS] = {"saved", "gradient", "workspace", "loss", "state"};

bf_status bf_run_newbuf_fmt(bf_run *r, int *id, size_t bytes, bf_buf_kind kind, const char *fmt, const char *a,
                            const char *b) {
    if (r->nbuf >= BF_RUN_MAXBUF)
        return BF_FAIL(BF_ERR_ARG, "model too large for the planner: its step needs more than %d buffers (BF_PLAN_MAX "
                       "in csrc/core/planner.h); use fewer layer calls or split the model", BF_RUN_MAXBUF);
    snprintf(r->buf_names[r->nbuf], sizeof r->buf_names[0], fmt, a, b);
    if (bytes > BF_MAX_BUF_BYTES)
        return BF_FAIL(BF_ERR_BUDGET, "%s needs %zu bytes for a batch of %d rows, more than any machine holds (2**52); "
                       "use a smaller batch_size or smaller layers", r->buf_names[r->nbuf], bytes, r->B);
    r->buf_kind[r->nbuf] = (unsigned char)kind;
    *id = r->nbuf++;
    bf_plan_buf *p = &r->bufs[*id];
    p->bytes = bytes;
    p->first = INT_MAX;
    p->last = -1;
    p->offset = 0;
    return BF_OK;
}

void bf_run_use(bf_run *r, int id, int t) {
    if (id < 0) return;
    if (t < r->bufs[id].first) r->bufs[id].first = t;
    if (t > r->bufs[id].last) r->bufs[id].last = t;
}

bf_status bf_run_newbuf(bf_run *r, int *id, size_t bytes, bf_buf_kind kind, const char *name, const char *what) {
    return bf_run_newbuf_fmt(r, id, bytes, kind, "%s%s", name, what);
}
