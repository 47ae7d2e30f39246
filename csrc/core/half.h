/* half.h - one value between float32 and the 16-bit storage types of mixed
 * precision, shared by the CPU (cpu/bf16.c, cpu/f16_f16c.c) and CUDA
 * (cuda/half.cu) conversions so both store the same bits: bfloat16 (the high
 * half of a float32) and IEEE float16, both rounded to nearest even; a NaN
 * stays a quiet NaN, a float16 overflow is Inf (as numpy's astype(float16)). */
#ifndef BF_HALF_H
#define BF_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define BF_HALF_HD __host__ __device__ __forceinline__
#else
#define BF_HALF_HD static inline
#endif

BF_HALF_HD float bf_half_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

BF_HALF_HD uint32_t bf_half_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

BF_HALF_HD float bf_bf16_expand(uint16_t h) { return bf_half_from_bits((uint32_t)h << 16); }

/* branch-free (a select), so that loops of it vectorize; the same value for each of the 2**32 inputs */
BF_HALF_HD uint16_t bf_bf16_round(float f) {
    const uint32_t u = bf_half_bits(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded); /* NaN: quiet, sign kept */
}

BF_HALF_HD float bf_f16_expand(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (e == 31) return bf_half_from_bits(sign | 0x7f800000u | (man << 13));
    if (e == 0) { /* zero or subnormal: man * 2^-24 exactly */
        const float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bf_half_from_bits(sign | ((e + 112u) << 23) | (man << 13));
}

/* F. Giesen's float_to_half_fast3_rtne */
BF_HALF_HD uint16_t bf_f16_round(float f) {
    uint32_t u = bf_half_bits(f);
    const uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint16_t o;
    if (u >= 0x47800000u) { /* >= 65536: Inf, or NaN (quiet) */
        o = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 0x38800000u) { /* below 2^-14: subnormal or zero, rounded by a float add */
        const float d = bf_half_from_bits(u) + 0.5f;
        o = (uint16_t)(bf_half_bits(d) - 0x3f000000u);
    } else {
        const uint32_t odd = (u >> 13) & 1u;
        u += 0xc8000fffu + odd; /* rebias the exponent (-112 << 23), round to nearest even */
        o = (uint16_t)(u >> 13);
    }
    return (uint16_t)(o | (sign >> 16));
}

#endif
