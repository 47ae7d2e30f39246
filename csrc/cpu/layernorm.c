/* layernorm.c - LayerNormalization over the last axis on the CPU, as Keras 3
 * (population variance, eps inside the square root). Row statistics are
 * summed in double in partial sums; mean and 1/std per row are kept for
 * backward, which adds into dgamma / dbeta and overwrites dinp. The row
 * loops are rowops_kern.h, compiled per instruction set (rowops.h); the
 * pool splits the rows (par_ops.c). */
#include "cpu_ops.h"
#include "rowops.h"

// out (N,C) = (inp - mean) * invstd * gamma + beta; mean, invstd (N)
bf_status bf_cpu_layernorm_forward_serial(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                          const float *gamma, const float *beta, long N, int C, float eps) {
    (void)be;
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    bf_rowops()->ln_fwd(out, mean, invstd, inp, gamma, beta, N, C, eps);
    return BF_OK;
}

// dinp (N,C) overwritten, dgamma / dbeta (C) added to (each may be NULL) from dout (N,C)
bf_status bf_cpu_layernorm_backward_serial(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                           const float *inp, const float *mean, const float *invstd, const float *gamma,
                                           long N, int C) {
    (void)be;
    if (N <= 0 || C <= 0) return BF_FAIL(BF_ERR_SHAPE, "layernorm: bad sizes N=%ld C=%d", N, C);
    bf_rowops()->ln_bwd(dinp, dgamma, dbeta, dout, inp, mean, invstd, gamma, N, C);
    return BF_OK;
}
