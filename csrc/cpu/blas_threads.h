/* blas_threads.h - run an op's GEMMs on one OpenBLAS thread, then restore the
 * count. Ops made of many small GEMMs (per-step RNN products, per-(batch,
 * head) attention tiles) spent more time in OpenBLAS's thread hand-over and
 * spinning than computing on a busy 2-core machine (benchmarks/bench_lstm.py,
 * bench_transformer.py). Shared by rnn.c and attention.c. */
#ifndef BF_BLAS_THREADS_H
#define BF_BLAS_THREADS_H

#include "blas.h"

/* Lowers OpenBLAS to one thread when `small` is true; returns the count to
 * hand to bf_blas_threads_back (0 when nothing was changed). */
static inline int bf_blas_one_thread(int small) {
    int n = bf_openblas_get_num_threads();
    if (!small || n <= 1) return 0;
    bf_openblas_set_num_threads(1);
    return n;
}

static inline void bf_blas_threads_back(int n) {
    if (n > 1) bf_openblas_set_num_threads(n);
}

#endif
