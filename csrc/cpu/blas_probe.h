/* blas_probe.h - bring OpenBLAS's per-thread packing buffers up (see blas_probe.c). */
#ifndef BF_BLAS_PROBE_H
#define BF_BLAS_PROBE_H

#include "status.h"

/* One GEMM C (M,N) = A (M,K) @ B (K,N) over zero pages; touches C and
 * whatever OpenBLAS touches for this shape, holds nothing afterwards. */
bf_status bf_cpu_blas_probe(int M, int N, int K);

#endif
