/* merge.c - CPU ops of graphs: elementwise merges (Add, Subtract, Multiply,
 * Average, Maximum, Minimum) with their backward helpers and gradient
 * accumulation, and the column-block copy behind Concatenate and the split of
 * packed multi-input batches and multi-output targets. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"

// out (n) = op(a (n), b (n), c (n)); out may alias any input
bf_status bf_cpu_ewise_serial(bf_backend *be, float *out, const float *a, const float *b, const float *c,
                              bf_ewise_op op, float alpha, long n) {
    (void)be;
    switch (op) {
    case BF_EW_ADD: for (long i = 0; i < n; i++) out[i] = alpha * (a[i] + b[i]); break;
    case BF_EW_SUB: for (long i = 0; i < n; i++) out[i] = alpha * (a[i] - b[i]); break;
    case BF_EW_MUL: for (long i = 0; i < n; i++) out[i] = alpha * (a[i] * b[i]); break;
    case BF_EW_MAX: for (long i = 0; i < n; i++) out[i] = a[i] > b[i] || a[i] != a[i] ? a[i] : b[i]; break;
    case BF_EW_MIN: for (long i = 0; i < n; i++) out[i] = a[i] < b[i] || a[i] != a[i] ? a[i] : b[i]; break;
    case BF_EW_SCALE: for (long i = 0; i < n; i++) out[i] = alpha * a[i]; break;
    case BF_EW_SELECT: for (long i = 0; i < n; i++) out[i] = a[i] == b[i] ? c[i] : 0.0f; break;
    default: return BF_FAIL(BF_ERR_INTERNAL, "ewise: unknown op %d", (int)op);
    }
    return BF_OK;
}

// out (rows, ld_out)[:, 0:cols] = inp (rows, ld_in)[:, 0:cols]
bf_status bf_cpu_copy2d(bf_backend *be, float *out, long ld_out, const float *inp, long ld_in, long rows, long cols) {
    (void)be;
    if (cols > ld_out || cols > ld_in) return BF_FAIL(BF_ERR_INTERNAL, "copy2d: %ld columns of rows %ld / %ld", cols, ld_out, ld_in);
    if (ld_out == cols && ld_in == cols) {
        memcpy(out, inp, sizeof(float) * (size_t)rows * (size_t)cols);
        return BF_OK;
    }
    for (long r = 0; r < rows; r++) memcpy(out + r * ld_out, inp + r * ld_in, sizeof(float) * (size_t)cols);
    return BF_OK;
}
