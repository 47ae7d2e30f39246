/* par_ops.c - the CPU backend's elementwise, row-wise and column-sum ops
 * split over the engine's pool (par.h): bf_cpu_<op>, the CPU's entry points
 * (cpu_ops.h). Each task runs the serial kernel (bf_cpu_<op>_serial) on
 * a slice of rows or elements; sums over rows (LayerNorm's dgamma / dbeta,
 * Dense's bias gradient) are split by columns, each column summed in row
 * order; a loss by rows (independent); a metric's sums by blocks of rows fixed
 * by the batch, added in block order (metrics.c does the same). So every
 * output has the same bits on any number of threads. Small inputs (below
 * GRAIN floats a task) run serially. */
#include <stdatomic.h>

#include "cpu_ops.h"
#include "par.h"

#define GRAIN (32L << 10) /* floats a task at least */

/* one split call: the kernel's arguments, the slicing and the first failure */
typedef struct {
    bf_backend *be;
    float *out, *s0, *s1, *s2;
    const float *a, *b, *c, *d, *e;
    long n, parts;
    int C, act, T; /* T: a metric's target width */
    float alpha;
    const bf_act_param *p;
    const bf_update_args *u;
    const bf_loss_spec *loss;
    const bf_metric_spec *metric;
    double (*parts_acc)[BF_METRIC_SMALL]; /* metric: one block's sums each */
    bf_ewise_op op;
    float *part_max; /* maxabs: one per slice */
    _Atomic int st, bad;
} job;

static void fail(job *j, bf_status s) {
    int ok = BF_OK;
    if (s != BF_OK) atomic_compare_exchange_strong(&j->st, &ok, (int)s);
}

/* runs task over j->parts parts on the pool; the first failure */
static bf_status run_parts(job *j, bf_par_fn task) {
    atomic_store(&j->st, BF_OK);
    bf_par_for(j->parts, bf_par_threads(), task, j);
    return (bf_status)atomic_load(&j->st);
}

/* runs task over slices of `rows` rows of C floats (at least GRAIN floats a
 * slice, at most 4 per thread) */
static bf_status run(job *j, long rows, int C, bf_par_fn task) {
    const int threads = bf_par_threads();
    j->parts = bf_par_parts(rows * (long)C, GRAIN, 4L * threads);
    if (j->parts > rows) j->parts = rows > 0 ? rows : 1;
    j->n = rows;
    j->C = C;
    return run_parts(j, task);
}

/* slice t: rows [lo, hi), o_ = lo * C floats in */
#define SLICE(j, t, lo, hi) \
    long lo, hi;            \
    bf_par_range((j)->n, (j)->parts, (t), &lo, &hi); \
    const long o_ = lo * (j)->C

static void act_fwd(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_act_forward_serial(j->be, j->out + o_, j->a + o_, (bf_act)j->act, hi - lo, j->C));
}
bf_status bf_cpu_act_forward(bf_backend *be, float *out, const float *inp, bf_act act, long N, int C) {
    job j = {.be = be, .out = out, .a = inp, .act = (int)act};
    return run(&j, N, C, act_fwd);
}

static void act_bwd(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_act_backward_serial(j->be, j->out + o_, j->a + o_, j->b + o_, (bf_act)j->act, hi - lo, j->C));
}
bf_status bf_cpu_act_backward(bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act, long N,
                              int C) {
    job j = {.be = be, .out = dinp, .a = dout, .b = out, .act = (int)act};
    return run(&j, N, C, act_bwd);
}

static void actx_fwd(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_actx_forward_serial(j->be, j->out + o_, j->a + o_, (bf_act)j->act, j->p, hi - lo));
}
bf_status bf_cpu_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                              long n) {
    job j = {.be = be, .out = out, .a = inp, .act = (int)act, .p = p};
    return run(&j, n, 1, actx_fwd);
}

static void actx_bwd(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_actx_backward_serial(j->be, j->out + o_, j->a + o_, j->b ? j->b + o_ : NULL, j->c ? j->c + o_ : NULL,
                                        (bf_act)j->act, j->p, hi - lo));
}
bf_status bf_cpu_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                               bf_act act, const bf_act_param *p, long n) {
    if (!dinp) return bf_cpu_actx_backward_serial(be, dinp, dout, inp, out, act, p, n);
    job j = {.be = be, .out = dinp, .a = dout, .b = inp, .c = out, .act = (int)act, .p = p};
    return run(&j, n, 1, actx_bwd);
}

static void ewise(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_ewise_serial(j->be, j->out + o_, j->a + o_, j->b ? j->b + o_ : NULL, j->c ? j->c + o_ : NULL, j->op,
                                j->alpha, hi - lo));
}
bf_status bf_cpu_ewise(bf_backend *be, float *out, const float *a, const float *b, const float *c, bf_ewise_op op,
                       float alpha, long n) {
    job j = {.be = be, .out = out, .a = a, .b = b, .c = c, .op = op, .alpha = alpha};
    return run(&j, n, 1, ewise);
}

static void update(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_opt_update_serial(j->be, j->out + o_, j->s0 ? j->s0 + o_ : NULL, j->s1 ? j->s1 + o_ : NULL,
                                     j->s2 ? j->s2 + o_ : NULL, j->a + o_, hi - lo, j->u));
}
bf_status bf_cpu_opt_update(bf_backend *be, float *w, float *s0, float *s1, float *s2, const float *g, long n,
                            const bf_update_args *a) {
    job j = {.be = be, .out = w, .s0 = s0, .s1 = s1, .s2 = s2, .a = g, .u = a};
    return run(&j, n, 1, update);
}

static void ln_fwd(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_layernorm_forward_serial(j->be, j->out + o_, j->s0 + lo, j->s1 + lo, j->a + o_, j->b, j->c, hi - lo,
                                            j->C, j->alpha));
}
bf_status bf_cpu_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps) {
    if (N <= 0 || C <= 0) return bf_cpu_layernorm_forward_serial(be, out, mean, invstd, inp, gamma, beta, N, C, eps);
    job j = {.be = be, .out = out, .s0 = mean, .s1 = invstd, .a = inp, .b = gamma, .c = beta, .alpha = eps};
    return run(&j, N, C, ln_fwd);
}

/* column slice t of C: [lo, hi) */
static void columns(const job *j, long t, long *lo, long *hi) { bf_par_range(j->C, j->parts, t, lo, hi); }

/* dgamma and dbeta columns [lo, hi) += over rows n in order (as the serial
 * kernel: dy * xhat and dy) */
static void ln_cols(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    long lo, hi;
    columns(j, t, &lo, &hi);
    const long C = j->C, N = j->n, w = hi - lo;
    const float *restrict mean = j->c, *restrict invstd = j->d;
    float *restrict dg = j->s0 ? j->s0 + lo : NULL, *restrict dbt = j->s1 ? j->s1 + lo : NULL;
    for (long n = 0; n < N; n++) {
        const float *restrict x = j->b + n * C + lo, *restrict dy = j->a + n * C + lo;
        const float m = mean[n], is = invstd[n];
        if (dg)
            for (long k = 0; k < w; k++) dg[k] += dy[k] * ((x[k] - m) * is);
        if (dbt)
            for (long k = 0; k < w; k++) dbt[k] += dy[k];
    }
}

static void ln_rows(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    fail(j, bf_cpu_layernorm_backward_serial(j->be, j->out + o_, NULL, NULL, j->a + o_, j->b + o_, j->c + lo, j->d + lo,
                                             j->e, hi - lo, j->C));
}

/* column jobs: one part per 16 columns at most, one per thread at most, none
 * below GRAIN floats (N rows of them) */
static long column_parts(long N, int C) {
    const int threads = bf_par_threads();
    long parts = bf_par_parts((long)C * N, GRAIN, threads);
    if (parts > C / 16) parts = C / 16 > 0 ? C / 16 : 1;
    return parts;
}

bf_status bf_cpu_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                    const float *inp, const float *mean, const float *invstd, const float *gamma,
                                    long N, int C) {
    if (N <= 0 || C <= 0)
        return bf_cpu_layernorm_backward_serial(be, dinp, dgamma, dbeta, dout, inp, mean, invstd, gamma, N, C);
    job j = {.be = be, .out = dinp, .s0 = dgamma, .s1 = dbeta, .a = dout, .b = inp, .c = mean, .d = invstd,
             .e = gamma, .n = N, .C = C};
    if (dgamma || dbeta) {
        j.parts = column_parts(N, C);
        bf_par_for(j.parts, bf_par_threads(), ln_cols, &j);
    }
    if (!dinp) return BF_OK;
    return run(&j, N, C, ln_rows);
}

/* db columns [lo, hi) += rows of dout in order */
static void bias_cols(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    long lo, hi;
    columns(j, t, &lo, &hi);
    const long C = j->C, N = j->n, w = hi - lo;
    float *restrict db = j->s0 + lo;
    for (long n = 0; n < N; n++) {
        const float *restrict r = j->a + n * C + lo;
        for (long k = 0; k < w; k++) db[k] += r[k];
    }
}

bf_status bf_cpu_dense_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                const float *inp, const float *w, int B, int IN, int OUT) {
    BF_TRY(bf_cpu_dense_backward_serial(be, dinp, dw, NULL, dout, inp, w, B, IN, OUT));
    if (!db || B <= 0 || OUT <= 0) return BF_OK;
    job j = {.be = be, .s0 = db, .a = dout, .n = B, .C = OUT, .parts = column_parts(B, OUT)};
    bf_par_for(j.parts, bf_par_threads(), bias_cols, &j);
    return BF_OK;
}

/* columns [lo, hi): dinp = act'(out) * dout row by row, and db += those rows
 * in row order (as bias_cols), while they are in cache */
static void act_bias_cols(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    long lo, hi;
    columns(j, t, &lo, &hi);
    const long C = j->C, w = hi - lo;
    float *restrict db = j->s0 + lo;
    for (long n = 0; n < j->n; n++) {
        const size_t o = (size_t)(n * C + lo);
        const float *dz = j->out + o; /* written by the call, then read */
        fail(j, bf_cpu_act_backward_serial(j->be, j->out + o, j->a + o, j->b + o, (bf_act)j->act, 1, (int)w));
        for (long k = 0; k < w; k++) db[k] += dz[k];
    }
}

bf_status bf_cpu_act_backward_bias(bf_backend *be, float *dinp, const float *dout, const float *out, bf_act act,
                                   long N, int C, float *db) {
    if (act == BF_ACT_SOFTMAX || N <= 0 || C <= 0)
        return BF_FAIL(BF_ERR_INTERNAL, "act_backward_bias: an elementwise activation over N=%ld C=%d", N, C);
    job j = {.be = be, .out = dinp, .a = dout, .b = out, .act = (int)act, .s0 = db, .n = N, .C = C,
             .parts = column_parts(N, C)};
    return run_parts(&j, act_bias_cols);
}

/* rows [lo, hi) of a loss: rows are independent, so the same bits as one
 * call; a bad SCCE label's row comes back as the whole call's B - row, the
 * largest kept (the lowest row) */
static void loss_rows(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    const long tgt = j->loss->kind == BF_LOSS_SCCE ? lo : o_; /* SCCE: one class id a row */
    int bad = 0;
    fail(j, bf_cpu_loss_forward_backward_serial(j->be, j->out + lo, j->s0 ? j->s0 + o_ : NULL, &bad, j->a + o_,
                                                j->b + tgt, j->c ? j->c + lo : NULL, j->loss, j->act, (int)(hi - lo),
                                                j->C, j->alpha));
    if (bad <= 0) return;
    const int global = (int)(j->n - (hi - bad)); /* local row hi - lo - bad, global row hi - bad */
    int seen = atomic_load(&j->bad);
    while (global > seen && !atomic_compare_exchange_weak(&j->bad, &seen, global)) {
    }
}

bf_status bf_cpu_loss_forward_backward(bf_backend *be, float *loss_out, float *dpred, int *bad_label,
                                       const float *pred, const float *target, const float *sw,
                                       const bf_loss_spec *loss, int fused, int B, int C, float scale) {
    if (!bad_label || B <= 0 || C <= 0) /* a bad label fails the call, naming its row: one call */
        return bf_cpu_loss_forward_backward_serial(be, loss_out, dpred, bad_label, pred, target, sw, loss, fused, B, C,
                                                   scale);
    job j = {.be = be, .out = loss_out, .s0 = dpred, .a = pred, .b = target, .c = sw, .loss = loss, .act = fused,
             .alpha = scale};
    atomic_store(&j.bad, 0);
    BF_TRY(run(&j, B, C, loss_rows));
    if (atomic_load(&j.bad) > *bad_label) *bad_label = atomic_load(&j.bad);
    return BF_OK;
}

/* block t of a metric's rows (bf_metric_block_rows) into its own sums */
static void metric_block(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    const int R = bf_metric_block_rows((int)j->n), lo = (int)t * R, hi = j->n - lo < R ? (int)j->n : lo + R;
    bf_cpu_metric_rows(j->parts_acc[t], j->a, j->b, j->c, j->metric, (bf_act)j->act, lo, hi, j->C, j->T);
}

bf_status bf_cpu_metric_update(bf_backend *be, double *acc, const float *pred, const float *target,
                               const float *sw, const bf_metric_spec *m, bf_act act, int B, int C, int T) {
    const long nv = bf_metric_nvalues(m), blocks = B > 0 ? (B + bf_metric_block_rows(B) - 1) / bf_metric_block_rows(B) : 0;
    if (nv > BF_METRIC_SMALL || blocks < 2 || (long)B * C < GRAIN)
        return bf_cpu_metric_update_serial(be, acc, pred, target, sw, m, act, B, C, T);
    double parts[BF_METRIC_BLOCKS][BF_METRIC_SMALL] = {{0}};
    job j = {.be = be, .a = pred, .b = target, .c = sw, .metric = m, .act = (int)act, .n = B, .C = C,
             .T = T, .parts_acc = parts, .parts = blocks};
    BF_TRY(run_parts(&j, metric_block));
    for (long b = 0; b < blocks; b++) /* in block order, as bf_cpu_metric_update_serial */
        for (long k = 0; k < nv; k++) acc[k] += parts[b][k];
    return BF_OK;
}

/* max |x| of slice t into part_max[t] (NaN comes as Inf) */
static void maxabs(void *c, long t, int slot) {
    job *j = c;
    (void)slot;
    SLICE(j, t, lo, hi);
    j->part_max[t] = 0.0f;
    bf_cpu_maxabs_serial(j->be, &j->part_max[t], j->a + o_, hi - lo);
}
bf_status bf_cpu_maxabs(bf_backend *be, float *out, const float *x, long n) {
    float part[BF_PAR_MAX * 4];
    const int threads = bf_par_threads();
    job j = {.be = be, .a = x, .n = n, .C = 1, .part_max = part, .parts = bf_par_parts(n, GRAIN, 4L * threads)};
    if (j.parts <= 1) return bf_cpu_maxabs_serial(be, out, x, n);
    bf_par_for(j.parts, threads, maxabs, &j);
    for (long t = 0; t < j.parts; t++)
        if (part[t] > *out) *out = part[t];
    return BF_OK;
}
