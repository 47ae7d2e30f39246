/* conv2d_direct.h - direct (implicit-GEMM) NHWC Conv2D for stride 1 and small
 * channel counts: the kernels per instruction set (conv2d_direct_avx512.c,
 * conv2d_direct_avx2.c, one template conv2d_direct_kern.h) and the driver
 * (conv2d_direct.c) that conv2d.c calls when bf_cpu_conv2d_direct_ok says so.
 * Every output element is summed in one fixed order, (kh, kw, c) ascending
 * then + bias, whatever the blocking or the threads; dw sums fixed row
 * ranges into BF_CDIR_PARTS partials in the workspace, then adds them in
 * order, so results are the same bits on any number of threads. */
#ifndef BF_CONV2D_DIRECT_H
#define BF_CONV2D_DIRECT_H

#include <stddef.h>

#include "backend.h"

/* one stride-1 convolution y (B,OH,OW,K) = x (B,H,W,C) * w (KH,KW,C,K) + b;
 * PT / PL pad top / left, the bottom / right padding is what OH / OW imply */
typedef struct {
    const float *x, *w, *b; /* b (K) may be NULL */
    float *y;
    int B, H, W, C, OH, OW, K, KH, KW, PT, PL;
} bf_cdir;

/* rows r0 .. r1 of y (a row: r = b*OH + oh, OW*K floats) */
void bf_cdir_fwd_rows_avx512(const bf_cdir *j, long r0, long r1);
void bf_cdir_fwd_rows_avx2(const bf_cdir *j, long r0, long r1);
/* dw (KH,KW,C,K) += sum over rows r0 .. r1 of x-window * dy, with dy in
 * j->y (B,OH,OW,K) */
void bf_cdir_dw_rows_avx512(float *dw, const bf_cdir *j, long r0, long r1);
void bf_cdir_dw_rows_avx2(float *dw, const bf_cdir *j, long r0, long r1);

/* dw partial sums (fixed: the bits must not depend on the thread count) */
#define BF_CDIR_PARTS 16
/* largest C and K the direct path takes (beyond, im2col + GEMM is faster) */
#define BF_CDIR_MAX_CH 64

/* nonzero when Conv2D g runs on the direct path (stride 1, not 1x1, C and K
 * <= BF_CDIR_MAX_CH, an AVX2 or AVX-512 CPU, bf_cpu_conv2d_direct not 0) */
int bf_cpu_conv2d_direct_ok(const bf_conv_geom *g);
/* workspace floats: forward 0; backward BF_CDIR_PARTS*(KK*K + K) + KK*K */
size_t bf_cpu_conv2d_direct_ws_floats(const bf_conv_geom *g, int backward);
// out (B,OH,OW,K) = conv(inp, w) + b
void bf_cpu_conv2d_direct_forward(float *out, const float *inp, const float *w, const float *b,
                                  const bf_conv_geom *g);
// dinp (B,H,W,C) = conv^T(dout) (overwritten); dw += ...; db += sum dout; any of the three may be NULL
void bf_cpu_conv2d_direct_backward(float *dinp, float *dw, float *db, float *ws, const float *dout,
                                   const float *inp, const float *w, const bf_conv_geom *g);

/* 1 (default): take the direct path where it applies; 0: im2col + GEMM only
 * (tests compare both). Must not change between planning and running. */
extern int bf_cpu_conv2d_direct;

#endif
