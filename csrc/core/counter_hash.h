/* counter_hash.h - the counter-based random bits every random op draws
 * (weight init, Dropout, attention and recurrent dropout, augmentations):
 * splitmix64(seed ^ i * golden ratio), its top 24 bits. One definition for
 * the CPU and CUDA kernels, so both draw the same bits for (seed, i) and a
 * backward pass can draw its forward's masks again instead of keeping them. */
#ifndef BF_COUNTER_HASH_H
#define BF_COUNTER_HASH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define BF_CHD __host__ __device__ __forceinline__
#else
#define BF_CHD static inline
#endif

BF_CHD uint64_t bf_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* 24 random bits for element i of the stream `seed` */
BF_CHD uint32_t bf_counter_bits(uint64_t seed, uint64_t i) {
    return (uint32_t)(bf_splitmix64(seed ^ (i * 0x9E3779B97F4A7C15ull)) >> 40);
}

/* the same as a uniform in [0, 1) */
BF_CHD float bf_counter_uniform(uint64_t seed, uint64_t i) {
    return (float)bf_counter_bits(seed, i) * (1.0f / 16777216.0f);
}

/* z ~ N(0, 1) for element e of the stream `seed`: Box-Muller of its uniforms 2e and 2e + 1 */
BF_CHD float bf_counter_normal(uint64_t seed, uint64_t e) {
    const float u1 = 1.0f - bf_counter_uniform(seed, 2u * e), u2 = bf_counter_uniform(seed, 2u * e + 1u);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

#endif
