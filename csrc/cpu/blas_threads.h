/* blas_threads.h - how many of the pool's threads (par.h) an op's GEMMs run
 * on. Ops made
 * of many small GEMMs (per-step RNN products, per-(batch, head) attention
 * tiles) are faster on all threads on a quiet machine (LSTM benchmark 1800
 * -> 2200 samples/s on 2 cores) but 3x to 12x slower when other work shares
 * the cores, as the threads then wait on each other at every GEMM. So
 * such ops measure both: bf_blas_tune times each call per unit of work in
 * the mode it ran, tries both at first and the other one every
 * BF_TUNE_PROBE calls, and otherwise runs the faster. GEMMs are split by
 * rows or columns, never the sums (gemm.c), so both modes give the same
 * bits. Shared by rnn.c and attention.c. */
#ifndef BF_BLAS_THREADS_H
#define BF_BLAS_THREADS_H

#include <stdatomic.h>
#include <time.h>

#include "par.h"

/* Lowers the engine to one thread when `small` is true; returns the count to
 * hand to bf_blas_threads_back (0 when nothing was changed). */
static inline int bf_blas_one_thread(int small) {
    const int n = bf_par_threads();
    if (!small || n <= 1) return 0;
    bf_par_set_threads(1);
    return n;
}

static inline void bf_blas_threads_back(int n) {
    if (n > 1) bf_par_set_threads(n);
}

#define BF_TUNE_PROBE 16 /* calls between two tries of the mode not in use */

/* one op's measurements: seconds per unit of work, [0] one thread, [1] all */
typedef struct {
    _Atomic long calls;
    _Atomic double cost[2];
} bf_blas_tune;

/* the mode of this call (1: all threads): call 0 warms up, calls 1-4
 * alternate, then the cheaper one, the other every BF_TUNE_PROBE calls */
static inline int bf_tune_pick(bf_blas_tune *t, long *call) {
    const long c = atomic_fetch_add(&t->calls, 1);
    *call = c;
    if (c <= 4) return (int)(c & 1);
    const int best = atomic_load(&t->cost[1]) < atomic_load(&t->cost[0]);
    return c % BF_TUNE_PROBE == 0 ? !best : best;
}

static inline double bf_tune_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* records `seconds` for `work` units in `mode` (a moving average; call 0 is
 * the warm-up and not kept) */
static inline void bf_tune_record(bf_blas_tune *t, long call, int mode, double seconds, double work) {
    if (call == 0 || work <= 0.0) return;
    const double v = seconds / work, old = atomic_load(&t->cost[mode]);
    atomic_store(&t->cost[mode], old == 0.0 ? v : 0.7 * old + 0.3 * v);
}

/* An op that has one: picks its mode and lowers the threads for it; the end
 * call records the time and restores them. */
typedef struct {
    bf_blas_tune *t;
    long call;
    int mode, restore;
    double t0;
} bf_tune_run;

static inline bf_tune_run bf_tune_begin(bf_blas_tune *t) {
    bf_tune_run r = {.t = t};
    r.mode = bf_tune_pick(t, &r.call);
    r.restore = bf_blas_one_thread(!r.mode);
    r.t0 = bf_tune_now();
    return r;
}

static inline void bf_tune_end(bf_tune_run *r, double work) {
    bf_tune_record(r->t, r->call, r->mode, bf_tune_now() - r->t0, work);
    bf_blas_threads_back(r->restore);
}

#endif
