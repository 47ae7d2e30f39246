/* conv2d_direct_avx2.c - the direct Conv2D kernels (conv2d_direct_kern.h)
 * for AVX2 + FMA: 8 floats a vector, tails through vmaskmov, up to 2 vectors
 * (16 output channels) per pass with 12 accumulators of the 16 registers.
 * Compiled for AVX2 whatever the build's -march; called only when
 * cpu_isa.h says the CPU has it. */
#include "conv2d_direct.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#include <immintrin.h>

#define SFX avx2
#define VW 8
#define V __m256
#define MASK __m256i
#define VZERO() _mm256_setzero_ps()
#define VBC(p) _mm256_broadcast_ss(p)
#define VLOADM(p, m) _mm256_maskload_ps((p), (m))
#define VSTOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define MASKOF(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define MFULL _mm256_set1_epi32(-1)
#define NVMAX 2
#define RB_1 12
#define RB_2 6
#define CB_1 12
#define CB_2 6

#include "conv2d_direct_kern.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else /* not x86: never called (cpu_isa.c reports scalar), present for the link */
void bf_cdir_fwd_rows_avx2(const bf_cdir *j, long r0, long r1) { (void)j, (void)r0, (void)r1; }
void bf_cdir_dw_rows_avx2(float *dw, const bf_cdir *j, long r0, long r1) { (void)dw, (void)j, (void)r0, (void)r1; }
#endif
