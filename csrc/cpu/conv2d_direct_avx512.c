/* conv2d_direct_avx512.c - the direct Conv2D kernels (conv2d_direct_kern.h)
 * for AVX-512: 16 floats a vector, masked tails, up to 4 vectors (64 output
 * channels) per pass with 24 accumulators of the 32 registers. Compiled for
 * AVX-512 whatever the build's -march; called only when cpu_isa.h says the
 * CPU has it. */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
#include <immintrin.h>

#include "conv2d_direct.h"

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

#pragma GCC pop_options
