/* strided.c - the strided gather of backend.h (bf_strided) on the CPU:
 * Permute, ZeroPadding2D, UpSampling2D and their backward.
 * Walks the output index like an odometer; sums over the reduction axes. */
#include "cpu_ops.h"

bf_status bf_strided_check(const bf_strided *s) {
    if (!s || s->nd < 1 || s->nd > BF_STRIDED_MAXD || s->nr < 0 || s->nr > 2)
        return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: bad geometry");
    for (int k = 0; k < s->nd; k++)
        if (s->n[k] < 0) return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: negative size");
    for (int j = 0; j < s->nr; j++)
        if (s->rn[j] < 1) return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: empty reduction");
    return BF_OK;
}

// out[sum i_k os_k] = sum_r inp[sum i_k is_k + sum r_j rs_j]
bf_status bf_cpu_strided_copy(bf_backend *be, float *out, const float *inp, const bf_strided *s) {
    (void)be;
    BF_TRY(bf_strided_check(s));
    long total = 1;
    for (int k = 0; k < s->nd; k++) total *= s->n[k];
    if (total == 0) return BF_OK;
    long idx[BF_STRIDED_MAXD] = {0}, o = 0, i = 0;
    const long r0 = s->nr > 0 ? s->rn[0] : 1, r1 = s->nr > 1 ? s->rn[1] : 1;
    const long s0 = s->nr > 0 ? s->rs[0] : 0, s1 = s->nr > 1 ? s->rs[1] : 0;
    const int last = s->nd - 1;
    for (long e = 0; e < total; e++) {
        if (s->nr == 0) {
            out[o] = inp[i];
        } else {
            float acc = 0.0f;
            for (long a = 0; a < r0; a++)
                for (long b = 0; b < r1; b++) acc += inp[i + a * s0 + b * s1];
            out[o] = acc;
        }
        /* next index */
        for (int k = last; k >= 0; k--) {
            o += s->os[k];
            i += s->is[k];
            if (++idx[k] < s->n[k]) break;
            o -= s->os[k] * s->n[k];
            i -= s->is[k] * s->n[k];
            idx[k] = 0;
        }
    }
    return BF_OK;
}
