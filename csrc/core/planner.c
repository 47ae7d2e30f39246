/* planner.c - liveness-based offset assignment (see planner.h).
 * Buffers are placed in order of first use; at each op index, buffers whose
 * last use has passed return to a sorted free list (merged with neighbours);
 * a new buffer takes the smallest free block that fits, else grows the region.
 * No allocation: the free list and the order live in the caller's work space (the run's tables). */
#include "planner.h"

#include <string.h>

#include "arena.h"

typedef struct { size_t off, len; } span;

static void free_insert(span *fl, int *nf, size_t off, size_t len) {
    int i = 0;
    while (i < *nf && fl[i].off < off) i++;
    memmove(fl + i + 1, fl + i, (size_t)(*nf - i) * sizeof *fl);
    fl[i].off = off;
    fl[i].len = len;
    (*nf)++;
    /* merge with the right then the left neighbour */
    if (i + 1 < *nf && fl[i].off + fl[i].len == fl[i + 1].off) {
        fl[i].len += fl[i + 1].len;
        memmove(fl + i + 1, fl + i + 2, (size_t)(*nf - i - 2) * sizeof *fl);
        (*nf)--;
    }
    if (i > 0 && fl[i - 1].off + fl[i - 1].len == fl[i].off) {
        fl[i - 1].len += fl[i].len;
        memmove(fl + i, fl + i + 1, (size_t)(*nf - i - 1) * sizeof *fl);
        (*nf)--;
    }
}

size_t bf_plan_work_bytes(int n) { return (size_t)(n + 1) * sizeof(span) + (size_t)n * sizeof(int); }

bf_status bf_plan_offsets(bf_plan_buf *bufs, int n, size_t *peak, void *work, int cap) {
    span *fl = work;                  /* (cap + 1) */
    int *order = (int *)(fl + cap + 1); /* (cap) */
    int nf = 0, last_op = 0;
    size_t top = 0;
    *peak = 0;
    if (n > cap) return BF_FAIL(BF_ERR_ARG, "model too large: %d planned buffers (the run's table holds %d)", n, cap);
    for (int i = 0; i < n; i++) {
        if (bufs[i].first > bufs[i].last)
            return BF_FAIL(BF_ERR_INTERNAL, "buffer %d used before defined", i);
        order[i] = i;
        if (bufs[i].last > last_op) last_op = bufs[i].last;
    }
    /* stable insertion sort by first use */
    for (int i = 1; i < n; i++) {
        int k = order[i], j = i - 1;
        while (j >= 0 && bufs[order[j]].first > bufs[k].first) { order[j + 1] = order[j]; j--; }
        order[j + 1] = k;
    }
    int next = 0;
    for (int t = 0; t <= last_op && next < n; t++) {
        /* buffers whose last use was before t are free again */
        for (int i = 0; i < next; i++) {
            bf_plan_buf *b = &bufs[order[i]];
            if (b->last == t - 1 && b->bytes) free_insert(fl, &nf, b->offset, bf_align_up(b->bytes));
        }
        while (next < n && bufs[order[next]].first == t) {
            bf_plan_buf *b = &bufs[order[next++]];
            size_t len = bf_align_up(b->bytes);
            if (len == 0) { b->offset = 0; continue; }
            int best = -1;
            for (int i = 0; i < nf; i++)
                if (fl[i].len >= len && (best < 0 || fl[i].len < fl[best].len)) best = i;
            if (best >= 0) {
                b->offset = fl[best].off;
                fl[best].off += len;
                fl[best].len -= len;
                if (fl[best].len == 0) {
                    memmove(fl + best, fl + best + 1, (size_t)(nf - best - 1) * sizeof *fl);
                    nf--;
                }
            } else if (nf > 0 && fl[nf - 1].off + fl[nf - 1].len == top) {
                /* extend the free block at the top of the region */
                b->offset = fl[nf - 1].off;
                top = b->offset + len;
                nf--;
            } else {
                b->offset = top;
                top += len;
            }
            if (top > *peak) *peak = top;
        }
    }
    return BF_OK;
}
