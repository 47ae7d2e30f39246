/* dense.c - fully connected layer on the CPU via OpenBLAS sgemm.
 * Kernel layout (IN,OUT) as Keras. Backward adds into dw/db, overwrites dinp. */

#include "blas.h"
#include "cpu_ops.h"

// out (B,OUT) = inp (B,IN) @ w (IN,OUT) + b (OUT)
bf_status bf_cpu_dense_forward(bf_backend *be, float *out, const float *inp, const float *w,
                               const float *b, int B, int IN, int OUT) {
    (void)be;
    if (B <= 0 || IN <= 0 || OUT <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "dense: bad sizes B=%d IN=%d OUT=%d", B, IN, OUT);
    if (b) bf_sgemm_bias(B, OUT, IN, inp, w, b, out);
    else bf_sgemm(0, 0, B, OUT, IN, 1.0f, inp, IN, w, OUT, 0.0f, out, OUT);
    return BF_OK;
}

// dinp (B,IN) = dout (B,OUT) @ w^T; dw (IN,OUT) += inp^T @ dout; db (OUT) += sum_B dout
bf_status bf_cpu_dense_backward_serial(bf_backend *be, float *dinp, float *dw, float *db,
                                       const float *dout, const float *inp, const float *w, int B,
                                       int IN, int OUT) {
    (void)be;
    if (dw) bf_sgemm(1, 0, IN, OUT, B, 1.0f, inp, IN, dout, OUT, 1.0f, dw, OUT); /* NULL: frozen */
    if (db) {
        for (int i = 0; i < B; i++) {
            const float *r = dout + (size_t)i * OUT;
            for (int j = 0; j < OUT; j++) db[j] += r[j];
        }
    }
    if (dinp) bf_sgemm(0, 1, B, IN, OUT, 1.0f, dout, OUT, w, OUT, 0.0f, dinp, IN);
    return BF_OK;
}
