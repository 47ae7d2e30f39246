/* emap.c - the CPU's elementwise primitives (core/emap_math.h's formulas,
 * shared with CUDA): unary_map / unary_grad over n elements, binary_map over
 * a broadcast geometry (bf_bcast) and binary_grad, whose every element sums
 * its broadcast axes in one fixed order. Split over the pool by slices of
 * output elements (each written by one task), so the bits do not depend on
 * the thread count. */
#include "cpu_ops.h"
#include "emap_math.h"
#include "par.h"

#define GRAIN (16L << 10) /* elements a task at least */

typedef struct {
    float *out;
    const float *x, *y, *dout, *a, *b;
    const bf_map_op *m;
    const bf_bcast *g;
    int op, j;
    long n, parts;
} job;

static void split(job *jb, long n, bf_par_fn fn) {
    jb->n = n;
    jb->parts = bf_par_parts(n, GRAIN, 4L * bf_par_threads());
    bf_par_for(jb->parts, bf_par_threads(), fn, jb);
}

static void map_task(void *c, long t, int slot) {
    const job *jb = c;
    const bf_map_op *m = jb->m;
    long lo, hi;
    (void)slot;
    bf_par_range(jb->n, jb->parts, t, &lo, &hi);
    for (long i = lo; i < hi; i++) jb->out[i] = bf_map_value(m->op, m->left, jb->x[i], m->p, m->q, m->r);
}

// out (n) = op(x (n))
bf_status bf_cpu_unary_map(bf_backend *be, float *out, const float *x, const bf_map_op *m, long n) {
    (void)be;
    job jb = {.out = out, .x = x, .m = m};
    split(&jb, n, map_task);
    return BF_OK;
}

static void grad_task(void *c, long t, int slot) {
    const job *jb = c;
    const bf_map_op *m = jb->m;
    long lo, hi;
    (void)slot;
    bf_par_range(jb->n, jb->parts, t, &lo, &hi);
    for (long i = lo; i < hi; i++)
        jb->out[i] = jb->dout[i] * bf_map_grad(m->op, m->left, jb->x[i], jb->y[i], m->p, m->q, m->r);
}

// dx (n) = op'(x, y) * dout
bf_status bf_cpu_unary_grad(bf_backend *be, float *dx, const float *x, const float *y, const float *dout,
                            const bf_map_op *m, long n) {
    (void)be;
    job jb = {.out = dx, .x = x, .y = y, .dout = dout, .m = m};
    split(&jb, n, grad_task);
    return BF_OK;
}

static void bmap_task(void *c, long t, int slot) {
    const job *jb = c;
    const bf_bcast *g = jb->g;
    const int nd = g->nd, L = nd - 1;
    long lo, hi, idx[BF_BCAST_MAXD];
    (void)slot;
    bf_par_range(jb->n, jb->parts, t, &lo, &hi);
    long i = lo;
    while (i < hi) { /* one run along the last axis at a time */
        long rest = i, oa = 0, ob = 0;
        for (int d = L; d >= 0; d--) {
            idx[d] = rest % g->n[d];
            rest /= g->n[d];
            oa += idx[d] * g->s[0][d];
            ob += idx[d] * g->s[1][d];
        }
        const long run = g->n[L] - idx[L] < hi - i ? g->n[L] - idx[L] : hi - i;
        const long sa = g->s[0][L], sb = g->s[1][L];
        for (long k = 0; k < run; k++) jb->out[i + k] = bf_binary_value(jb->op, jb->a[oa + k * sa], jb->b[ob + k * sb]);
        i += run;
    }
}

// out (g->n) = op(a, b) broadcast
bf_status bf_cpu_binary_map(bf_backend *be, float *out, const float *a, const float *b, int op, const bf_bcast *g) {
    (void)be;
    const long n = bf_bcast_size(g);
    job jb = {.out = out, .a = a, .b = b, .op = op, .g = g};
    split(&jb, n, bmap_task);
    return BF_OK;
}

typedef struct {
    job jb;
    bf_grad_geom q;
} grad_job;

static void bgrad_task(void *c, long t, int slot) {
    const grad_job *gj = c;
    const job *jb = &gj->jb;
    const bf_grad_geom *q = &gj->q;
    long lo, hi;
    (void)slot;
    bf_par_range(jb->n, jb->parts, t, &lo, &hi);
    for (long e = lo; e < hi; e++) jb->out[e] = bf_binary_grad_elem(q, e, jb->op, jb->j, jb->a, jb->b, jb->y, jb->dout);
}

// d (operand j) = sum over its broadcast axes of d op / d operand_j * dout (g->n)
bf_status bf_cpu_binary_grad(bf_backend *be, float *d, int j, const float *a, const float *b, const float *y,
                             const float *dout, int op, const bf_bcast *g) {
    (void)be;
    grad_job gj = {.jb = {.out = d, .a = a, .b = b, .y = y, .dout = dout, .op = op, .j = j}};
    bf_grad_geometry(g, j, &gj.q);
    if (bf_bcast_size(g) == 0) return BF_OK;
    gj.jb.n = gj.q.size;
    gj.jb.parts = bf_par_parts(gj.q.size, GRAIN / (gj.q.rsize < GRAIN ? gj.q.rsize : GRAIN), 4L * bf_par_threads());
    bf_par_for(gj.jb.parts, bf_par_threads(), bgrad_task, &gj);
    return BF_OK;
}
