/* attn_ops.h - the CPU's LayerNormalization and multi-head attention ops
 * (layernorm.c, attention.c), behind the vtable entries of backend.h. */
#ifndef BF_ATTN_OPS_H
#define BF_ATTN_OPS_H

#include "backend.h"
#include "counter_hash.h"

bf_status bf_cpu_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                   const float *gamma, const float *beta, long N, int C, float eps);
bf_status bf_cpu_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                    const float *inp, const float *mean, const float *invstd, const float *gamma,
                                    long N, int C);
size_t bf_cpu_attention_workspace_bytes(bf_backend *be, const bf_attn_geom *g, int backward);
bf_status bf_cpu_attention_forward(bf_backend *be, float *O, float *P, void *ws, const float *Q, const float *K,
                                   const float *V, const float *mask, const bf_attn_geom *g);
bf_status bf_cpu_attention_backward(bf_backend *be, float *dQ, float *dK, float *dV, void *ws, const float *dO,
                                    const float *Q, const float *K, const float *V, const float *P,
                                    const float *mask, const bf_attn_geom *g);

/* attention dropout: element idx of the (B,H,TQ,TK) weights is kept when a
 * 24-bit uniform from (seed, idx) is >= rate; forward and backward (CPU and
 * CUDA) draw the same bits, so no mask is stored */
static inline int bf_attn_keep(uint64_t seed, uint64_t idx, float rate) {
    return bf_counter_uniform(seed, idx) >= rate;
}

#endif
