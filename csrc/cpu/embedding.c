/* embedding.c - Embedding on the CPU: a gather of table rows by id and, for
 * backward, a scatter-add into the table's gradient (no one-hot GEMM). Ids
 * arrive as floats; one that is not an integer in [0, V) gives a zero row and
 * is reported through *bad / *bad_val (the lowest such row). */
#include <string.h>

#include "cpu_ops.h"

static int valid_id(float v, int V, int *k) {
    if (!(v >= 0.0f && v < (float)V)) return 0;
    *k = (int)v;
    return (float)*k == v;
}

// out (n,D) = table (V,D)[ids (n)]; mask (n) = ids != 0
bf_status bf_cpu_embedding_forward(bf_backend *be, float *out, float *mask, int *bad, float *bad_val,
                                   const float *ids, const float *table, long n, int D, int V) {
    (void)be;
    for (long r = 0; r < n; r++) {
        int k;
        float *o = out + (size_t)r * D;
        if (valid_id(ids[r], V, &k)) {
            memcpy(o, table + (size_t)k * D, sizeof(float) * (size_t)D);
        } else {
            memset(o, 0, sizeof(float) * (size_t)D);
            if (bad && *bad < (int)(n - r)) {
                *bad = (int)(n - r);
                if (bad_val) *bad_val = ids[r];
            }
        }
        if (mask) mask[r] = ids[r] != 0.0f ? 1.0f : 0.0f;
    }
    return BF_OK;
}

// dtable (V,D) += dout (n,D) at rows ids (n)
bf_status bf_cpu_embedding_backward(bf_backend *be, float *dtable, const float *dout, const float *ids, long n,
                                    int D, int V) {
    (void)be;
    for (long r = 0; r < n; r++) {
        int k;
        if (!valid_id(ids[r], V, &k)) continue;
        float *t = dtable + (size_t)k * D;
        const float *d = dout + (size_t)r * D;
        for (int j = 0; j < D; j++) t[j] += d[j];
    }
    return BF_OK;
}
