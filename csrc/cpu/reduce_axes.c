/* reduce_axes.c - the reduction over any axes (bf_reduce_geom, backend.h) on
 * the CPU: sum, mean, max, min, prod, argmax, argmin, any, all, logsumexp,
 * and their gradients. Each output element is reduced by one task, over its
 * elements in row-major order of the reduced axes (sums and products in
 * double), so the bits are the same on any number of threads; the pool splits
 * the output elements. Backward OVERWRITES dinp: every input element belongs
 * to one output element, whose task writes it. No scratch, no allocation. */
#include <math.h>

#include "cpu_ops.h"
#include "par.h"
#include "reduce_walk.h"

#define GRAIN (16L << 10) /* input floats a task at least */

typedef struct {
    float *out, *dinp;
    const float *inp, *dout, *fout;
    bf_reduce_walk w; /* the axes an output element reduces (core/reduce_walk.h) */
    long parts;       /* tasks */
} job;

/* for every element v of output o's set, in order: p (const float *) its run, m its index in the run */
#define EACH(j, o, ...)                                                                                            \
    do {                                                                                                           \
        const long base_ = bf_reduce_base(&(j)->w, o), in_ = (j)->w.rn[(j)->w.nr - 1], is_ = (j)->w.rs[(j)->w.nr - 1];                  \
        for (long k_ = 0; k_ < (j)->w.outer; k_++) {                                                                 \
            const long at_ = base_ + bf_reduce_run(&(j)->w, k_);                                                                \
            for (long m_ = 0; m_ < in_; m_++) {                                                                    \
                const long i_ = at_ + m_ * is_;                                                                    \
                const long pos_ = k_ * in_ + m_;                                                                   \
                (void)pos_;                                                                                        \
                __VA_ARGS__                                                                                            \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)

static float max_of(const job *j, long o, int want_max, long *where) {
    float m = NAN;
    long w = -1;
    EACH(j, o, {
        const float v = j->inp[i_];
        if (w < 0 || (isnan(v) && !isnan(m)) || (!isnan(m) && (want_max ? v > m : v < m))) m = v, w = pos_;
    });
    if (where) *where = w;
    return m;
}

static float forward_one(const job *j, long o) {
    double s = 0.0, p = 1.0;
    long w;
    int flag;
    switch (j->w.op) {
    case BF_RED_SUM:
    case BF_RED_MEAN:
        EACH(j, o, { s += j->inp[i_]; });
        return (float)(j->w.op == BF_RED_MEAN ? s / (double)j->w.R : s);
    case BF_RED_MAX:
    case BF_RED_MIN:
        return max_of(j, o, j->w.op == BF_RED_MAX, NULL);
    case BF_RED_ARGMAX:
    case BF_RED_ARGMIN:
        max_of(j, o, j->w.op == BF_RED_ARGMAX, &w);
        return (float)w;
    case BF_RED_PROD:
        EACH(j, o, { p *= j->inp[i_]; });
        return (float)p;
    case BF_RED_ANY:
        flag = 0;
        EACH(j, o, { flag |= j->inp[i_] != 0.0f; });
        return (float)flag;
    case BF_RED_ALL:
        flag = 1;
        EACH(j, o, { flag &= j->inp[i_] != 0.0f; });
        return (float)flag;
    case BF_RED_LOGSUMEXP: {
        float m = max_of(j, o, 1, NULL);
        if (!isfinite(m)) m = 0.0f;
        EACH(j, o, { s += exp((double)j->inp[i_] - m); });
        return (float)(m + log(s));
    }
    }
    return NAN;
}

static void backward_one(const job *j, long o) {
    const float g = j->dout[o];
    float *d = j->dinp;
    switch (j->w.op) {
    case BF_RED_SUM:
    case BF_RED_MEAN: {
        const float v = j->w.op == BF_RED_MEAN ? g / (float)j->w.R : g;
        EACH(j, o, { d[i_] = v; });
        return;
    }
    case BF_RED_MAX:
    case BF_RED_MIN: { /* split equally among the elements equal to the result */
        const float m = j->fout[o];
        long c = 0;
        EACH(j, o, { c += j->inp[i_] == m; });
        const float share = c ? g / (float)c : 0.0f;
        EACH(j, o, { d[i_] = j->inp[i_] == m ? share : 0.0f; });
        return;
    }
    case BF_RED_PROD: { /* the product of the others: of the nonzero ones, where one element is 0 */
        double p = 1.0;
        long zeros = 0;
        EACH(j, o, {
            const float v = j->inp[i_];
            if (v == 0.0f) zeros++;
            else p *= v;
        });
        EACH(j, o, {
            const float v = j->inp[i_];
            d[i_] = zeros == 0 ? (float)(g * (p / v)) : zeros == 1 && v == 0.0f ? (float)(g * p) : 0.0f;
        });
        return;
    }
    case BF_RED_LOGSUMEXP: {
        const double m = j->fout[o];
        EACH(j, o, { d[i_] = (float)(g * exp((double)j->inp[i_] - m)); });
        return;
    }
    default: /* argmax, argmin, any, all: no gradient */
        EACH(j, o, { d[i_] = 0.0f; });
        return;
    }
}

static void fwd_task(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long lo, hi;
    bf_par_range(j->w.O, j->parts, t, &lo, &hi);
    for (long o = lo; o < hi; o++) j->out[o] = forward_one(j, o);
}

static void bwd_task(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long lo, hi;
    bf_par_range(j->w.O, j->parts, t, &lo, &hi);
    for (long o = lo; o < hi; o++) backward_one(j, o);
}

static bf_status run(job *j, const bf_reduce_geom *g, bf_par_fn fn) {
    if (!g || g->nd < 1 || g->nd > BF_REDUCE_MAXD || g->op < 0 || g->op > BF_RED_LAST)
        return BF_FAIL(BF_ERR_INTERNAL, "reduce: bad geometry");
    bf_reduce_walk_of(&j->w, g);
    if (j->w.O == 0 || j->w.R == 0) return BF_OK;
    const long per = j->w.R > GRAIN ? 1 : GRAIN / j->w.R; /* outputs a task at least */
    j->parts = bf_par_parts(j->w.O, per, 4L * bf_par_threads());
    bf_par_for(j->parts, bf_par_threads(), fn, j);
    return BF_OK;
}

// out (kept axes of g->n) = g->op over the reduced axes of inp (g->n)
bf_status bf_cpu_reduce_forward(bf_backend *be, float *out, const float *inp, const bf_reduce_geom *g) {
    (void)be;
    job j = {.out = out, .inp = inp};
    return run(&j, g, fwd_task);
}

// dinp (g->n) = the gradient of out (kept axes) times dout, overwritten
bf_status bf_cpu_reduce_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                                 const bf_reduce_geom *g) {
    (void)be;
    job j = {.dinp = dinp, .dout = dout, .inp = inp, .fout = out};
    return run(&j, g, bwd_task);
}
