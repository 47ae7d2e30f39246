/* cpu_backend.c - the CPU backend vtable: host memory and the csrc/cpu ops. */
#include <string.h>

#include "arena.h"
#include "attn_ops.h"
#include "cpu_conv.h"
#include "cpu_convx.h"
#include "cpu_ops.h"
#include "seq_ops.h"

static bf_status cpu_reserve(bf_backend *be, void **out, size_t bytes) {
    (void)be;
    return bf_host_reserve(out, bytes);
}
static void cpu_release(bf_backend *be, void *p) {
    (void)be;
    bf_host_release(p);
}
static bf_status cpu_copy(bf_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (dst != src) memcpy(dst, src, bytes);
    return BF_OK;
}
static bf_status cpu_zero(bf_backend *be, void *dst, size_t bytes) {
    (void)be;
    memset(dst, 0, bytes);
    return BF_OK;
}
static bf_status cpu_sync(bf_backend *be) {
    (void)be;
    return BF_OK;
}
static size_t cpu_conv2d_ws(bf_backend *be, const bf_conv_geom *g, int backward) {
    (void)be;
    return bf_cpu_conv2d_workspace_bytes(g, backward);
}

static bf_backend bf_cpu = {
    .name = "cpu",
    .reserve = cpu_reserve,
    .release = cpu_release,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .fill_zero = cpu_zero,
    .sync = cpu_sync,
    .dense_forward = bf_cpu_dense_forward,
    .dense_backward = bf_par_dense_backward,
    .act_forward = bf_par_act_forward,
    .act_backward = bf_par_act_backward,
    .act_backward_bias = bf_par_act_backward_bias,
    .loss_forward_backward = bf_par_loss_forward_backward,
    .metric_update = bf_par_metric_update,
    .sum = bf_cpu_sum,
    .nonfinite = bf_cpu_nonfinite,
    .maxabs = bf_par_maxabs,
    .sumsq = bf_cpu_sumsq,
    .regularize = bf_cpu_regularize,
    .constrain = bf_cpu_constrain,
    .grad_clip = bf_cpu_grad_clip,
    .opt_update = bf_par_opt_update,
    .conv2d_workspace_bytes = cpu_conv2d_ws,
    .conv2d_forward = bf_cpu_conv2d_forward,
    .conv2d_backward = bf_cpu_conv2d_backward,
    .maxpool_forward = bf_cpu_maxpool_forward,
    .maxpool_backward = bf_cpu_maxpool_backward,
    .avgpool_forward = bf_cpu_avgpool_forward,
    .avgpool_backward = bf_cpu_avgpool_backward,
    .batchnorm_forward = bf_cpu_batchnorm_forward,
    .batchnorm_backward = bf_cpu_batchnorm_backward,
    .dropout_forward = bf_cpu_dropout_forward,
    .dropout_backward = bf_cpu_dropout_backward,
    .ewise = bf_par_ewise,
    .copy2d = bf_cpu_copy2d,
    .batchnorm_backward_frozen = bf_cpu_batchnorm_backward_frozen,
    .actx_forward = bf_par_actx_forward,
    .actx_backward = bf_par_actx_backward,
    .strided_copy = bf_cpu_strided_copy,
    .rescale_forward = bf_cpu_rescale_forward,
    .rescale_backward = bf_cpu_rescale_backward,
    .augment_forward = bf_cpu_augment_forward,
    .augment_backward = bf_cpu_augment_backward,
    .conv1d_workspace_bytes = bf_cpu_conv1d_workspace_bytes,
    .conv1d_forward = bf_cpu_conv1d_forward,
    .conv1d_backward = bf_cpu_conv1d_backward,
    .conv2d_transpose_workspace_bytes = bf_cpu_conv2d_transpose_workspace_bytes,
    .conv2d_transpose_forward = bf_cpu_conv2d_transpose_forward,
    .conv2d_transpose_backward = bf_cpu_conv2d_transpose_backward,
    .layernorm_forward = bf_par_layernorm_forward,
    .layernorm_backward = bf_par_layernorm_backward,
    .attention_workspace_bytes = bf_cpu_attention_workspace_bytes,
    .attention_forward = bf_cpu_attention_forward,
    .attention_backward = bf_cpu_attention_backward,
    .impl = NULL,
    .embedding_forward = bf_cpu_embedding_forward,
    .embedding_backward = bf_cpu_embedding_backward,
    .rnn_workspace_bytes = bf_cpu_rnn_workspace_bytes,
    .rnn_forward = bf_cpu_rnn_forward,
    .rnn_backward = bf_cpu_rnn_backward,
    .masked_mean_forward = bf_cpu_masked_mean_forward,
    .masked_mean_backward = bf_cpu_masked_mean_backward,
    .pos_weights = bf_cpu_pos_weights,
    .depthwise_forward = bf_cpu_depthwise_forward,
    .depthwise_backward = bf_cpu_depthwise_backward,
};

bf_backend *bf_cpu_backend(void) { return &bf_cpu; }
