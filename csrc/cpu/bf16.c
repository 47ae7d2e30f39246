/* bf16.c - bfloat16 storage on the CPU (mixed precision, core/mixed.c):
 * conversions between bfloat16 (the high 16 bits of a float32) and float32,
 * rounding to nearest even (a NaN stays a quiet NaN), accumulation into a
 * bfloat16 gradient, and the scan for NaN / Inf. Elementwise, split over the
 * pool in slices of elements: the same bits on any number of threads. This
 * is the conversion path of the design; AVX512-BF16 / AMX dot products on
 * bfloat16 operands would replace the convert + float32 kernels where the
 * CPU has them (not yet: docs/mixed-precision.md). */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cpu_ops.h"
#include "par.h"

#define GRAIN (64L << 10) /* elements a task at least */

static inline float expand(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t round16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN: quiet, sign kept */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* out[lo, hi) from in[lo, hi) */
static void convert(void *out, const void *in, bf_bf16_how how, long lo, long hi, int *bad) {
    uint16_t *o16 = out;
    float *o32 = out;
    const uint16_t *i16 = in;
    const float *i32 = in;
    switch (how) {
    case BF_BF16_EXPAND:
        for (long k = lo; k < hi; k++) o32[k] = expand(i16[k]);
        break;
    case BF_BF16_ROUND:
        for (long k = lo; k < hi; k++) o16[k] = round16(i32[k]);
        break;
    case BF_BF16_ROUND_F32:
        for (long k = lo; k < hi; k++) o32[k] = expand(round16(i32[k]));
        break;
    case BF_BF16_ADD:
        for (long k = lo; k < hi; k++) o16[k] = round16(expand(o16[k]) + i32[k]);
        break;
    case BF_BF16_ADD16:
        for (long k = lo; k < hi; k++) o16[k] = round16(expand(o16[k]) + expand(i16[k]));
        break;
    case BF_BF16_SCAN: {
        int b = 0;
        for (long k = lo; k < hi; k++) b |= (i16[k] & 0x7f80u) == 0x7f80u;
        if (b) *bad = 1;
        break;
    }
    }
}

typedef struct {
    void *out;
    const void *in;
    bf_bf16_how how;
    long n, parts;
    _Atomic int bad;
} job;

static void task(void *c, long t, int slot) {
    job *j = c;
    long lo, hi;
    int bad = 0;
    (void)slot;
    bf_par_range(j->n, j->parts, t, &lo, &hi);
    convert(j->out, j->in, j->how, lo, hi, &bad);
    if (bad) atomic_store(&j->bad, 1);
}

/* out (n) = in (n) converted as `how` says (core/backend.h bf_bf16_how) */
bf_status bf_cpu_bf16_convert(bf_backend *be, void *out, const void *in, bf_bf16_how how, long n) {
    (void)be;
    if (n <= 0) return BF_OK;
    job j = {.out = out, .in = in, .how = how, .n = n};
    j.parts = bf_par_parts(n, GRAIN, bf_par_threads());
    atomic_init(&j.bad, 0);
    if (j.parts <= 1) {
        int bad = 0;
        convert(out, in, how, 0, n, &bad);
        if (bad) *(int *)out = 1;
        return BF_OK;
    }
    bf_par_for(j.parts, bf_par_threads(), task, &j);
    if (atomic_load(&j.bad)) *(int *)out = 1;
    return BF_OK;
}
