/* cpu_conv.h - what the CPU's convolution, pooling and dropout kernels
 * share besides their ops (cpu_ops.h): Conv2D's (im2col + OpenBLAS sgemm,
 * tiled) workspace cap and tiling, the geometry check, the dropout keep-test.
 * NHWC layout, Conv2D kernel (KH,KW,C,K). No kernel allocates: scratch only
 * through `ws`, sized by bf_cpu_conv2d_workspace_bytes and independent of
 * the batch size beyond a fixed cap. */
#ifndef BF_CPU_CONV_H
#define BF_CPU_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "counter_hash.h"
#include "cpu_ops.h"

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

/* The dropout keep-test (core/counter_hash.h, the CUDA kernel's bit for
 * bit): keep element i iff its 24 bits k >= ceil(rate * 2^24), i.e. the
 * uniform k * 2^-24 >= rate. */
static inline uint32_t bf_dropout_bits(uint64_t seed, uint64_t i) { return bf_counter_bits(seed, i); }
static inline float bf_dropout_uniform(uint64_t seed, uint64_t i) { return bf_counter_uniform(seed, i); }

#endif
