/* cuda_attn.h - the CUDA LayerNormalization and multi-head attention ops
 * (layernorm.cu, attention.cu), same names and arguments as the CPU's
 * (csrc/cpu/attn_ops.h) and the vtable entries of backend.h. */
#ifndef BF_CUDA_ATTN_H
#define BF_CUDA_ATTN_H

#include "cuda_check.h"

bf_status bf_cuda_layernorm_forward(bf_backend *be, float *out, float *mean, float *invstd, const float *inp,
                                    const float *gamma, const float *beta, long N, int C, float eps);
bf_status bf_cuda_layernorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta, const float *dout,
                                     const float *inp, const float *mean, const float *invstd, const float *gamma,
                                     long N, int C);
size_t bf_cuda_attention_workspace_bytes(bf_backend *be, const bf_attn_geom *g, int backward);
bf_status bf_cuda_attention_forward(bf_backend *be, float *O, float *P, void *ws, const float *Q, const float *K,
                                    const float *V, const float *mask, const bf_attn_geom *g);
bf_status bf_cuda_attention_backward(bf_backend *be, float *dQ, float *dK, float *dV, void *ws, const float *dO,
                                     const float *Q, const float *K, const float *V, const float *P,
                                     const float *mask, const bf_attn_geom *g);

#endif
