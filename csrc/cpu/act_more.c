/* act_more.c - Keras 3's other activations on the CPU (formulas in
 * core/act_math.h, shared with CUDA). Elementwise; in place allowed. */
#include "act_math.h"
#include "cpu_ops.h"

static bf_status check(const char *op, bf_act act, const bf_act_param *p, long n) {
    if (n < 0) return BF_FAIL(BF_ERR_SHAPE, "%s: negative size %ld", op, n);
    if (!bf_act_is_x(act) || (int)act > BF_ACT_LAST) return BF_FAIL(BF_ERR_ARG, "%s: activation %d is not one of its kinds", op, (int)act);
    if (!p) return BF_FAIL(BF_ERR_ARG, "%s: activation parameters missing", op);
    return BF_OK;
}

// out (n) = act(inp (n))
bf_status bf_cpu_actx_forward(bf_backend *be, float *out, const float *inp, bf_act act, const bf_act_param *p, long n) {
    (void)be;
    BF_TRY(check("actx_forward", act, p, n));
    const float a = p->alpha, mx = p->max_value, t = p->threshold;
    for (long i = 0; i < n; i++) out[i] = bf_act_value((int)act, inp[i], a, mx, t);
    return BF_OK;
}

// dinp (n) = act'(inp or out) * dout
bf_status bf_cpu_actx_backward(bf_backend *be, float *dinp, const float *dout, const float *inp, const float *out,
                               bf_act act, const bf_act_param *p, long n) {
    (void)be;
    BF_TRY(check("actx_backward", act, p, n));
    if (!dinp || n == 0) return BF_OK;
    const int x = bf_act_needs_x(act);
    if (!(x ? inp : out)) return BF_FAIL(BF_ERR_ARG, "actx_backward: the activation's %s is required", x ? "input" : "output");
    const float a = p->alpha, mx = p->max_value, t = p->threshold;
    for (long i = 0; i < n; i++)
        dinp[i] = dout[i] * bf_act_grad((int)act, x ? inp[i] : 0.0f, x ? 0.0f : out[i], a, mx, t);
    return BF_OK;
}
