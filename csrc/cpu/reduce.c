/* reduce.c - sums (loss and metric totals), the non-finite scan (ORs into
 * *bad) and max |x| (raises *out: the gradient guard's bound). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_ops.h"

bf_status bf_cpu_sum(bf_backend *be, double *sum_out, const float *x, long n) {
    (void)be;
    double s = 0.0;
    for (long i = 0; i < n; i++) s += x[i];
    *sum_out = s;
    return BF_OK;
}

bf_status bf_cpu_nonfinite(bf_backend *be, int *bad, const float *x, long n) {
    (void)be;
    /* NaN and +-Inf are exactly the floats whose exponent bits are all ones;
     * an integer test with an OR reduction vectorizes (a float reduction
     * would not, without reassociation) and runs at memory bandwidth */
    const uint32_t *u = (const uint32_t *)(const void *)x;
    uint32_t acc = 0;
    for (long i = 0; i < n; i++) acc |= (u[i] & 0x7f800000u) == 0x7f800000u;
    if (acc) *bad = 1;
    return BF_OK;
}

bf_status bf_cpu_maxabs_serial(bf_backend *be, float *out, const float *x, long n) {
    (void)be;
    /* |x| as bits orders like the values; NaN and Inf sort above every finite */
    const uint32_t *u = (const uint32_t *)(const void *)x;
    uint32_t m = 0;
    memcpy(&m, out, sizeof m); /* raise what is there (>= +0.0f) */
    m &= 0x7fffffffu;
    for (long i = 0; i < n; i++) {
        uint32_t a = u[i] & 0x7fffffffu;
        m = a > m ? a : m;
    }
    if (m >= 0x7f800000u) {
        *out = INFINITY;
    } else {
        float f;
        memcpy(&f, &m, sizeof f);
        *out = f;
    }
    return BF_OK;
}
