/* act_more.cu - Keras 3's other activations on CUDA, with the CPU's formulas
 * (core/act_math.h). Elementwise, grid-stride; in place allowed. */
#include "cuda_ops.h"  /* first: the core headers with C linkage */
#include "act_math.h"

// out (n) = act(inp (n))
__global__ void actx_forward_kernel(float *out, const float *inp, int act, float a, float mx, float t, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] = bf_act_value(act, inp[i], a, mx, t);
}

// dinp (n) = act'(inp or out) * dout
__global__ void actx_backward_kernel(float *dinp, const float *dout, const float *inp, const float *out, int act,
                                     float a, float mx, float t, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float x = inp ? inp[i] : 0.0f, y = out ? out[i] : 0.0f;
        dinp[i] = dout[i] * bf_act_grad(act, x, y, a, mx, t);
    }
}

static bf_status check(const char *op, bf_act act, const bf_act_param *p, long n) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    if (!bf_act_is_x(act) || (int)act > BF_ACT_LAST) return BF_FAIL(BF_ERR_ARG, "%s: activation %d is not one of its kinds", op, (int)act);
    if (!p) return BF_FAIL(BF_ERR_ARG, "%s: activation parameters missing", op);
    return BF_OK;
}

bf_status bf_cuda_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p,
                               long n) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("actx_forward", act, p, n));
    if (n == 0) return BF_OK;
    actx_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, (int)act, p->alpha, p->max_value,
                                                                      p->threshold, n);
    BF_CUDA_LAUNCHED(st, actx_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                                bf_act act, const bf_act_param *p, long n) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(check("actx_backward", act, p, n));
    if (n == 0 || !dinp) return BF_OK;
    const int x = bf_act_needs_x(act);
    if (!(x ? inp : out)) return BF_FAIL(BF_ERR_ARG, "actx_backward: the activation's %s is required", x ? "input" : "output");
    actx_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, x ? inp : NULL, x ? NULL : out,
                                                                       (int)act, p->alpha, p->max_value, p->threshold, n);
    BF_CUDA_LAUNCHED(st, actx_backward_kernel);
    return BF_OK;
}
