/* cpu_conv.h - CPU implementations of the convolutional-layer ops of backend.h:
 * Conv2D (im2col + OpenBLAS sgemm, tiled), max / average pooling, batch
 * normalization and inverted dropout. Same names and argument order as the
 * vtable, with the bf_cpu_ prefix; NHWC layout, Conv2D kernel (KH,KW,C,K).
 * Invariants: no kernel allocates (scratch only through `ws`, sized by
 * bf_cpu_conv2d_workspace_bytes and independent of the batch size beyond a
 * fixed cap); backward functions ADD into dw/db/dgamma/dbeta and OVERWRITE
 * dinp; dinp may be NULL (first layer). */
#ifndef BF_CPU_CONV_H
#define BF_CPU_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "counter_hash.h"

/* Cap (bytes) on the im2col tile of one Conv2D call; the tile is never smaller
 * than one output row (OW rows of the im2col matrix). Default 4 MiB. Tests may
 * lower it to force tiles that cut across rows and samples; it must not change
 * between planning (workspace_bytes) and running. */
extern size_t bf_cpu_conv2d_ws_cap;
/* 1 (default): let skinny GEMMs use OpenBLAS's batched GEMM where it is fast;
 * 0: plain sgemm only (tests compare both paths). Same rule as the cap. */
extern int bf_cpu_conv2d_batch;

/* Geometry check shared by Conv2D and pooling: positive sizes, OH/OW/PT/PL as
 * Keras computes them for 'valid' or 'same'; pooling also needs K == C. */
bf_status bf_cpu_check_geom(const bf_conv_geom *g, const char *op, int pooling);

/* Rows of the im2col matrix per tile (0 when the conv needs no im2col). */
long bf_cpu_conv2d_tile_rows(const bf_conv_geom *g);

/* bytes of scratch for conv2d_forward (backward = 0) or conv2d_backward (1) */
size_t bf_cpu_conv2d_workspace_bytes(const bf_conv_geom *g, int backward);
// out (B,OH,OW,K) = conv(inp (B,H,W,C), w (KH,KW,C,K)) + b (K); b may be NULL
bf_status bf_cpu_conv2d_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                const float *w, const float *b, const bf_conv_geom *g);
// dinp (B,H,W,C) = conv^T(dout); dw (KH,KW,C,K) += ...; db (K) += sum dout; dinp/db may be NULL
bf_status bf_cpu_conv2d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                 const float *dout, const float *inp, const float *w,
                                 const bf_conv_geom *g);

// out (B,OH,OW,C) = max over the valid cells of each window of inp (B,H,W,C)
bf_status bf_cpu_maxpool_forward(bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g);
// dinp (B,H,W,C) = dout routed to the first maximum of each window
bf_status bf_cpu_maxpool_backward(bf_backend *be, float *dinp, const float *dout,
                                  const float *out, const float *inp, const bf_conv_geom *g);
// out (B,OH,OW,C) = mean over the valid (non-padded) cells of each window
bf_status bf_cpu_avgpool_forward(bf_backend *be, float *out, const float *inp,
                                 const bf_conv_geom *g);
bf_status bf_cpu_avgpool_backward(bf_backend *be, float *dinp, const float *dout,
                                  const bf_conv_geom *g);

// out (N,C) = gamma * (inp - mean) * invstd + beta; mean, invstd (C)
bf_status bf_cpu_batchnorm_forward(bf_backend *be, float *out, float *mean, float *invstd,
                                   float *moving_mean, float *moving_var, const float *inp,
                                   const float *gamma, const float *beta, long N, int C,
                                   float momentum, float eps, int training);
bf_status bf_cpu_batchnorm_backward(bf_backend *be, float *dinp, float *dgamma, float *dbeta,
                                    const float *dout, const float *inp, const float *mean,
                                    const float *invstd, const float *gamma, long N, int C);
// dinp (N,C) = dout * gamma * invstd: backward of a frozen (inference-mode) batchnorm; dinp may alias dout
bf_status bf_cpu_batchnorm_backward_frozen(bf_backend *be, float *dinp, const float *dout, const float *invstd,
                                           const float *gamma, long N, int C);

/* The dropout keep-test (core/counter_hash.h, the CUDA kernel's bit for
 * bit): keep element i iff its 24 bits k >= ceil(rate * 2^24), i.e. the
 * uniform k * 2^-24 >= rate. */
static inline uint32_t bf_dropout_bits(uint64_t seed, uint64_t i) { return bf_counter_bits(seed, i); }
static inline float bf_dropout_uniform(uint64_t seed, uint64_t i) { return bf_counter_uniform(seed, i); }
// out (n) = inp * mask / (1-rate); mask (n) of 0/1 (may be NULL when rate == 0)
bf_status bf_cpu_dropout_forward(bf_backend *be, float *out, float *mask, const float *inp,
                                 long n, float rate, uint64_t seed);
// dinp (n) = dout * mask / (1-rate)
bf_status bf_cpu_dropout_backward(bf_backend *be, float *dinp, const float *dout,
                                  const float *mask, long n, float rate);

#endif
