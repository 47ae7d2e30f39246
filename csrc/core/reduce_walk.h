/* reduce_walk.h - a reduction's geometry (bf_reduce_geom, backend.h) split
 * into its kept axes and its reduced ones, and the input offsets an output
 * element's elements are at: shared by the CPU (cpu/reduce_axes.c) and CUDA
 * (cuda/reduce_axes.cu) kernels, which walk them in the same order (row-major
 * over the reduced axes, the last one the inner run). */
#ifndef BF_REDUCE_WALK_H
#define BF_REDUCE_WALK_H

#include "act_math.h" /* BF_HD */
#include "backend.h"

typedef struct {
    int op, nk, nr;                              /* bf_reduce_op; kept and reduced axes */
    long kn[BF_REDUCE_MAXD], ks[BF_REDUCE_MAXD]; /* kept axes: sizes, input strides */
    long rn[BF_REDUCE_MAXD], rs[BF_REDUCE_MAXD]; /* reduced axes, the last one the inner run */
    long O, R, outer;                            /* outputs, elements per output, R / the inner run's size */
} bf_reduce_walk;

static inline void bf_reduce_walk_of(bf_reduce_walk *j, const bf_reduce_geom *g) {
    long stride[BF_REDUCE_MAXD], s = 1;
    for (int d = g->nd - 1; d >= 0; d--) stride[d] = s, s *= g->n[d];
    j->op = (int)g->op;
    j->nk = j->nr = 0;
    j->O = j->R = 1;
    for (int d = 0; d < g->nd; d++) {
        if (g->mask >> d & 1u) {
            j->rn[j->nr] = g->n[d], j->rs[j->nr++] = stride[d], j->R *= g->n[d];
        } else {
            j->kn[j->nk] = g->n[d], j->ks[j->nk++] = stride[d], j->O *= g->n[d];
        }
    }
    if (j->nr == 0) j->rn[0] = 1, j->rs[0] = 0, j->nr = 1; /* nothing reduced: a copy */
    j->outer = j->R / j->rn[j->nr - 1];
}

/* the input offset of output element o */
BF_HD long bf_reduce_base(const bf_reduce_walk *j, long o) {
    long off = 0;
    for (int k = j->nk - 1; k >= 0; k--) off += (o % j->kn[k]) * j->ks[k], o /= j->kn[k];
    return off;
}

/* the offset of the k-th run of the inner reduced axis (over the outer reduced axes, row-major) */
BF_HD long bf_reduce_run(const bf_reduce_walk *j, long k) {
    long off = 0;
    for (int a = j->nr - 2; a >= 0; a--) off += (k % j->rn[a]) * j->rs[a], k /= j->rn[a];
    return off;
}

#endif
