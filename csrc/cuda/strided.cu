/* strided.cu - the strided gather of backend.h (bf_strided) on CUDA:
 * Permute, ZeroPadding2D, UpSampling2D and their backward. One
 * thread per output element: its index is split into the axes by division,
 * the reduction axes are summed in the thread (no atomics, deterministic). */
#include "cuda_ops.h"

// out[sum i_k os_k] = sum_r inp[sum i_k is_k + sum r_j rs_j]
__global__ void strided_copy_kernel(float *out, const float *inp, bf_strided s, long total) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        long rest = e, o = 0, i = 0;
        for (int k = s.nd - 1; k >= 0; k--) {
            const long ik = rest % s.n[k];
            rest /= s.n[k];
            o += ik * s.os[k];
            i += ik * s.is[k];
        }
        if (s.nr == 0) {
            out[o] = inp[i];
            continue;
        }
        const long r1n = s.nr > 1 ? s.rn[1] : 1, r1s = s.nr > 1 ? s.rs[1] : 0;
        float acc = 0.0f;
        for (long a = 0; a < s.rn[0]; a++)
            for (long b = 0; b < r1n; b++) acc += inp[i + a * s.rs[0] + b * r1s];
        out[o] = acc;
    }
}

bf_status bf_cuda_strided_copy(bf_backend *be, float *out, const float *inp, const bf_strided *s) {
    BF_CUDA_ENTER(st, be);
    if (!s || s->nd < 1 || s->nd > BF_STRIDED_MAXD || s->nr < 0 || s->nr > 2)
        return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: bad geometry");
    long total = 1;
    for (int k = 0; k < s->nd; k++) {
        if (s->n[k] < 0) return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: negative size");
        total *= s->n[k];
    }
    for (int j = 0; j < s->nr; j++)
        if (s->rn[j] < 1) return BF_FAIL(BF_ERR_INTERNAL, "strided_copy: empty reduction");
    if (total == 0) return BF_OK;
    strided_copy_kernel<<<bf_cuda_grid(total, 256), 256, 0, st->stream>>>(out, inp, *s, total);
    BF_CUDA_LAUNCHED(st, strided_copy_kernel);
    return BF_OK;
}
