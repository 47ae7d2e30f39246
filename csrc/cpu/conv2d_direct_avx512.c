/* conv2d_direct_avx512.c - the direct Conv2D kernels (conv2d_direct_kern.h)
 * for AVX-512: 16 floats a vector, masked tails, up to 4 vectors (64 output
 * channels) per pass with 24 accumulators of the 32 registers. Compiled for
 * AVX-512 whatever the build's -march; called only when cpu_isa.h says the
 * CPU has it. */
#include "conv2d_direct.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
#endif
#include <immintrin.h>

#define SFX avx512
#define VW 16
#define V __m512
#define MASK __mmask16
#define VZERO() _mm512_setzero_ps()
#define VBC(p) _mm512_set1_ps(*(p))
#define VLOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define VSTOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define MASKOF(n) ((__mmask16)((1u << (n)) - 1u))
#define MFULL ((__mmask16)0xffff)
#define NVMAX 4
#define RB_1 14
#define RB_2 12
#define RB_3 8
#define RB_4 6
#define CB_1 16
#define CB_2 12
#define CB_3 8
#define CB_4 6

#include "conv2d_direct_kern.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else /* not x86: never called (cpu_isa.c reports scalar), present for the link */
void bf_cdir_fwd_rows_avx512(const bf_cdir *j, long r0, long r1) { (void)j, (void)r0, (void)r1; }
void bf_cdir_dw_rows_avx512(float *dw, const bf_cdir *j, long r0, long r1) { (void)dw, (void)j, (void)r0, (void)r1; }
#endif
