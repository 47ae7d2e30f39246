/* bf16.c - 16-bit storage on the CPU (mixed precision, core/mixed.c):
 * conversions between float32 and bfloat16 or float16 (BF_HALF_F16_BIT;
 * core/half.h: round to nearest even, a NaN stays a quiet NaN, float16 overflows
 * to Inf), accumulation into a 16-bit gradient, and the scan for NaN / Inf.
 * float16 runs on F16C where the CPU has it (f16_f16c.c, the same values).
 * Elementwise, split over the pool in slices of elements: the same bits on
 * any number of threads. This is the conversion path of the design;
 * AVX512-BF16 / AMX dot products on 16-bit operands would replace the
 * convert + float32 kernels where the CPU has them (not yet:
 * docs/mixed-precision.md). */
#include <stdatomic.h>
#include <stdint.h>

#include "cpu_isa.h"
#include "cpu_ops.h"
#include "half.h"
#include "par.h"

#define GRAIN (64L << 10) /* elements a task at least */

static int f16c(void) {
    static int has = -1; /* the ISA cap (BF_CPU_ISA) is read once per process, as cpu_isa.h's other users do */
    if (has < 0) has = bf_cpu_isa() >= BF_ISA_AVX2 && __builtin_cpu_supports("f16c");
    return has;
}

/* out[lo, hi) from in[lo, hi) */
static void convert(void *out, const void *in, int how, long lo, long hi, int *bad) {
    uint16_t *o16 = out;
    float *o32 = out;
    const uint16_t *i16 = in;
    const float *i32 = in;
    const int f16 = (how & BF_HALF_F16_BIT) != 0, op = how & ~BF_HALF_F16_BIT;
    if (op == BF_BF16_SCAN) { /* exponent all ones: Inf or NaN */
        const uint16_t e = f16 ? 0x7c00u : 0x7f80u;
        int b = 0;
        for (long k = lo; k < hi; k++) b |= (i16[k] & e) == e;
        if (b) *bad = 1;
        return;
    }
    if (f16 && f16c()) {
        bf_cpu_f16c_convert(out, in, op, lo, hi);
        return;
    }
#define HALF_OPS(EXPAND, ROUND)                                                                                  \
    switch (op) {                                                                                                \
    case BF_BF16_EXPAND: for (long k = lo; k < hi; k++) o32[k] = EXPAND(i16[k]); break;                          \
    case BF_BF16_ROUND: for (long k = lo; k < hi; k++) o16[k] = ROUND(i32[k]); break;                            \
    case BF_BF16_ROUND_F32: for (long k = lo; k < hi; k++) o32[k] = EXPAND(ROUND(i32[k])); break;                \
    case BF_BF16_ADD: for (long k = lo; k < hi; k++) o16[k] = ROUND(EXPAND(o16[k]) + i32[k]); break;             \
    case BF_BF16_ADD16: for (long k = lo; k < hi; k++) o16[k] = ROUND(EXPAND(o16[k]) + EXPAND(i16[k])); break;   \
    default: break;                                                                                              \
    }
    if (f16) HALF_OPS(bf_f16_expand, bf_f16_round)
    else HALF_OPS(bf_bf16_expand, bf_bf16_round)
#undef HALF_OPS
}

typedef struct {
    void *out;
    const void *in;
    int how;
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

/* out (n) = in (n) converted as `how` says (core/backend.h bf_bf16_how, BF_HALF_F16_BIT for float16) */
bf_status bf_cpu_bf16_convert(bf_backend *be, void *out, const void *in, bf_bf16_how how, long n) {
    (void)be;
    if (n <= 0) return BF_OK;
    job j = {.out = out, .in = in, .how = (int)how, .n = n};
    j.parts = bf_par_parts(n, GRAIN, bf_par_threads());
    atomic_init(&j.bad, 0);
    if (j.parts <= 1) {
        int bad = 0;
        convert(out, in, (int)how, 0, n, &bad);
        if (bad) *(int *)out = 1;
        return BF_OK;
    }
    bf_par_for(j.parts, bf_par_threads(), task, &j);
    if (atomic_load(&j.bad)) *(int *)out = 1;
    return BF_OK;
}
