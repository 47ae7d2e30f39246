/* reduce.c - sums (loss and metric totals) and the non-finite scan. */
#include <math.h>
#include <stdint.h>

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
    *bad = acc != 0;
    return BF_OK;
}
