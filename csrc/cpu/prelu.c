/* prelu.c - PReLU on the CPU: inp, out (P,Q,R,S), alpha (Q,S) broadcast over
 * P and R (backend_ops.h; the layer folds its axes so). Forward and the input
 * gradient are elementwise, split over the (p, q) runs of R*S floats. alpha's
 * gradient, dalpha[q,s] += sum over (p, r) of dout * min(inp, 0), is summed
 * in double, each element in one fixed order whatever the thread count:
 *  - many alpha elements (more than BLOCK_MAX): split by alpha elements, each
 *    summed over (p, r) in order by the one task that owns it;
 *  - few (a shared alpha, channels only): the rows p in NB blocks fixed by the
 *    shape (never by the threads), each block's partial sums on the caller's
 *    stack, added in block order.
 * So the bits are the same on any number of threads. Backward OVERWRITES
 * dinp, ADDS into dalpha; either may be NULL. No scratch, no allocation. */
#include "cpu_ops.h"
#include "par.h"

#define GRAIN (32L << 10) /* floats a task at least */
#define BLOCK_MAX 64      /* alpha elements summed over row blocks at most */
#define NB_MAX 16         /* row blocks of a small alpha at most */
#define ACC 256           /* a task's double accumulators (alpha elements at a time) */

typedef struct {
    float *out, *dalpha;
    const float *inp, *dout, *alpha;
    long P, parts, nb;
    int Q, R, S;
    double (*part)[BLOCK_MAX]; /* small alpha: one row block's sums each */
} job;

/* runs [lo, hi) of R*S floats of task t: the (p, q) pairs, P*Q of them */
static void runs(const job *j, long t, long *lo, long *hi) { bf_par_range(j->P * j->Q, j->parts, t, lo, hi); }

static void fwd_task(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long lo, hi;
    runs(j, t, &lo, &hi);
    const long RS = (long)j->R * j->S;
    for (long k = lo; k < hi; k++) {
        const float *restrict x = j->inp + k * RS, *restrict a = j->alpha + (k % j->Q) * j->S;
        float *restrict o = j->out + k * RS;
        for (int r = 0; r < j->R; r++, x += j->S, o += j->S)
            for (int s = 0; s < j->S; s++) o[s] = x[s] > 0.0f ? x[s] : a[s] * x[s];
    }
}

static void dinp_task(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long lo, hi;
    runs(j, t, &lo, &hi);
    const long RS = (long)j->R * j->S;
    for (long k = lo; k < hi; k++) {
        const float *restrict x = j->inp + k * RS, *restrict g = j->dout + k * RS;
        const float *restrict a = j->alpha + (k % j->Q) * j->S;
        float *restrict d = j->out + k * RS;
        for (int r = 0; r < j->R; r++, x += j->S, g += j->S, d += j->S)
            for (int s = 0; s < j->S; s++) d[s] = x[s] > 0.0f ? g[s] : x[s] < 0.0f ? g[s] * a[s] : 0.0f;
    }
}

/* acc[e - e0] += the sums of alpha elements e in [e0, e1) over rows p in [p0, p1), in (p, r) order */
static void dalpha_sums(const job *j, double *acc, long e0, long e1, long p0, long p1) {
    const int Q = j->Q, R = j->R, S = j->S;
    const long q0 = e0 / S, q1 = (e1 - 1) / S;
    for (long p = p0; p < p1; p++)
        for (long q = q0; q <= q1; q++) {
            const long s0 = q == q0 ? e0 % S : 0, s1 = q == q1 ? (e1 - 1) % S + 1 : S;
            double *restrict a = acc + (q * S + s0 - e0);
            const long base = ((p * Q + q) * R) * S;
            for (int r = 0; r < R; r++) {
                const float *restrict x = j->inp + base + (long)r * S, *restrict g = j->dout + base + (long)r * S;
                for (long s = s0; s < s1; s++)
                    if (x[s] < 0.0f) a[s - s0] += (double)g[s] * x[s];
            }
        }
}

/* many alpha elements: task t sums its elements over every row, ACC at a time */
static void dalpha_elems(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long lo, hi;
    bf_par_range((long)j->Q * j->S, j->parts, t, &lo, &hi);
    double acc[ACC];
    for (long e0 = lo; e0 < hi; e0 += ACC) {
        const long e1 = e0 + ACC < hi ? e0 + ACC : hi;
        for (long e = 0; e < e1 - e0; e++) acc[e] = 0.0;
        dalpha_sums(j, acc, e0, e1, 0, j->P);
        for (long e = e0; e < e1; e++) j->dalpha[e] += (float)acc[e - e0];
    }
}

/* few alpha elements: task t is row block t */
static void dalpha_rows(void *c, long t, int slot) {
    const job *j = c;
    (void)slot;
    long p0, p1;
    bf_par_range(j->P, j->nb, t, &p0, &p1);
    const long E = (long)j->Q * j->S;
    for (long e = 0; e < E; e++) j->part[t][e] = 0.0;
    dalpha_sums(j, j->part[t], 0, E, p0, p1);
}

/* parts of n floats over `units` independent units, at least GRAIN floats a part, at most 4 a thread */
static long parts_of(long n, long units) {
    long parts = bf_par_parts(n, GRAIN, 4L * bf_par_threads());
    return parts > units ? (units > 0 ? units : 1) : parts;
}

// out (P,Q,R,S) = inp > 0 ? inp : alpha (Q,S) * inp
bf_status bf_cpu_prelu_forward(bf_backend *be, float *out, const float *inp, const float *alpha, long P, int Q, int R,
                               int S) {
    (void)be;
    job j = {.out = out, .inp = inp, .alpha = alpha, .P = P, .Q = Q, .R = R, .S = S};
    j.parts = parts_of(P * Q * R * S, P * Q);
    bf_par_for(j.parts, bf_par_threads(), fwd_task, &j);
    return BF_OK;
}

// dinp (P,Q,R,S) = dout * prelu'(inp); dalpha (Q,S) += sum over (p, r) of dout * min(inp, 0)
bf_status bf_cpu_prelu_backward(bf_backend *be, float *dinp, float *dalpha, const float *dout, const float *inp,
                                const float *alpha, long P, int Q, int R, int S) {
    (void)be;
    const long n = P * Q * R * S, E = (long)Q * S;
    job j = {.out = dinp, .dalpha = dalpha, .inp = inp, .dout = dout, .alpha = alpha, .P = P, .Q = Q, .R = R, .S = S};
    if (dinp) {
        j.parts = parts_of(n, P * Q);
        bf_par_for(j.parts, bf_par_threads(), dinp_task, &j);
    }
    if (!dalpha || P <= 0) return BF_OK;
    if (E > BLOCK_MAX) {
        j.parts = parts_of(n, E);
        bf_par_for(j.parts, bf_par_threads(), dalpha_elems, &j);
        return BF_OK;
    }
    double part[NB_MAX][BLOCK_MAX];
    j.part = part;
    j.nb = n / GRAIN + 1; /* fixed by the shape */
    if (j.nb > NB_MAX) j.nb = NB_MAX;
    if (j.nb > P) j.nb = P;
    bf_par_for(j.nb, bf_par_threads(), dalpha_rows, &j);
    for (long e = 0; e < E; e++) {
        double t = 0.0;
        for (long b = 0; b < j.nb; b++) t += part[b][e];
        dalpha[e] += (float)t;
    }
    return BF_OK;
}
