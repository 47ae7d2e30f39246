/* timeline.c - op labels of a step program and the planned bytes live at each
 * op (see timeline.h). The op numbering is program.c's: the split of a packed
 * multi-input batch at t=0, forward of node i at t=i+1, losses at t=L+1, and
 * in training the backward of node i at t=2L+1-i. */
#include "timeline.h"

#include <stdio.h>

#include "arena.h"

int bf_run_nops(const bf_run *r) {
    int L = r->m->nlayers;
    return r->mode == BF_MODE_TRAIN ? 2 * L + 2 : L + 2;
}

void bf_run_op_label(const bf_run *r, int t, char *out, size_t n) {
    int L = r->m->nlayers;
    if (t <= 0) snprintf(out, n, "%s", r->m->n_inputs > 1 ? "split inputs" : "batch");
    else if (t <= L) snprintf(out, n, "forward %s", r->m->layers[t - 1].name);
    else if (t == L + 1) snprintf(out, n, "%s", r->mode == BF_MODE_PREDICT ? "outputs" : "loss");
    else if (t <= 2 * L + 1) snprintf(out, n, "backward %s", r->m->layers[2 * L + 1 - t].name);
    else snprintf(out, n, "op %d", t);
}

void bf_plan_live_at(const bf_plan_buf *bufs, int n, int t, size_t *live, size_t *top) {
    *live = *top = 0;
    for (int i = 0; i < n; i++) {
        size_t len = bf_align_up(bufs[i].bytes);
        if (!len || t < bufs[i].first || t > bufs[i].last) continue;
        *live += len;
        if (bufs[i].offset + len > *top) *top = bufs[i].offset + len;
    }
}
