/* bufs.c - the planned buffers of a step as they are listed (bufs.h). */
#include "bufs.h"

#include <limits.h>
#include <stdio.h>

const char *const bf_buf_kind_names[BF_BUF_KINDS] = {"saved", "gradient", "workspace", "loss", "state"};

bf_status bf_run_newbuf_fmt(bf_run *r, int *id, size_t bytes, bf_buf_kind kind, const char *fmt, const char *a,
                            const char *b) {
    if (r->nbuf >= r->cap_buf)
        return BF_FAIL(BF_ERR_ARG, "model too large for the planner: its step needs more than %d buffers (%d, and %d "
                       "per layer call and one per input: bf_run_buf_cap in csrc/core/step.h); use fewer layer calls "
                       "or split the model", r->cap_buf, BF_PLAN_MAX, BF_RUN_BUF_PER_NODE);
    snprintf(r->buf_names[r->nbuf], sizeof r->buf_names[0], fmt, a, b);
    if (bytes > BF_MAX_BUF_BYTES)
        return BF_FAIL(BF_ERR_BUDGET, "%s needs %zu bytes for a batch of %d rows, more than any machine holds (2**52); "
                       "use a smaller batch_size or smaller layers", r->buf_names[r->nbuf], bytes, r->B);
    r->listed_bytes += bytes; /* at most cap_buf (< 2**21) times 2**52 before this check: no wrap */
    if (r->listed_bytes > BF_MAX_STEP_BYTES)
        return BF_FAIL(BF_ERR_BUDGET, "the step's buffers need more than %zu bytes in all for a batch of %d rows, "
                       "more than any machine holds; use a smaller batch_size or smaller layers", BF_MAX_STEP_BYTES,
                       r->B);
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
