/* f16_f16c.c - float16 conversions with F16C (vcvtph2ps / vcvtps2ph, 8 values
 * a vector, round to nearest even), whatever the build's -march; bf16.c calls
 * them only where cpu_isa.h finds AVX2 and the CPU has F16C. The same values
 * as half.h's scalar ones. */
#include <stdint.h>

#include "cpu_ops.h"
#include "half.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif
#include <immintrin.h>

#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define LD16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define ST16(p, v) _mm_storeu_si128((__m128i *)(void *)(p), _mm256_cvtps_ph((v), RNE))

/* out[lo, hi) from in[lo, hi) as bf_bf16_how `how` (without BF_HALF_F16_BIT; not SCAN) */
void bf_cpu_f16c_convert(void *out, const void *in, int how, long lo, long hi) {
    uint16_t *o16 = out;
    float *o32 = out;
    const uint16_t *i16 = in;
    const float *i32 = in;
    long k = lo;
    for (; k + 8 <= hi; k += 8) switch (how) {
        case BF_BF16_EXPAND: _mm256_storeu_ps(o32 + k, LD16(i16 + k)); break;
        case BF_BF16_ROUND: ST16(o16 + k, _mm256_loadu_ps(i32 + k)); break;
        case BF_BF16_ROUND_F32: _mm256_storeu_ps(o32 + k, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(i32 + k), RNE))); break;
        case BF_BF16_ADD: ST16(o16 + k, _mm256_add_ps(LD16(o16 + k), _mm256_loadu_ps(i32 + k))); break;
        case BF_BF16_ADD16: ST16(o16 + k, _mm256_add_ps(LD16(o16 + k), LD16(i16 + k))); break;
        default: return;
        }
    for (; k < hi; k++) switch (how) {
        case BF_BF16_EXPAND: o32[k] = bf_f16_expand(i16[k]); break;
        case BF_BF16_ROUND: o16[k] = bf_f16_round(i32[k]); break;
        case BF_BF16_ROUND_F32: o32[k] = bf_f16_expand(bf_f16_round(i32[k])); break;
        case BF_BF16_ADD: o16[k] = bf_f16_round(bf_f16_expand(o16[k]) + i32[k]); break;
        case BF_BF16_ADD16: o16[k] = bf_f16_round(bf_f16_expand(o16[k]) + bf_f16_expand(i16[k])); break;
        default: return;
        }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#else
void bf_cpu_f16c_convert(void *out, const void *in, int how, long lo, long hi) {
    (void)out; (void)in; (void)how; (void)lo; (void)hi;
}
#endif
