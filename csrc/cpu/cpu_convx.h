/* cpu_convx.h - CPU Conv1D (conv1d.c) and Conv2DTranspose (conv2d_transpose.c),
 * same names and argument order as the vtable (backend.h) with the bf_cpu_
 * prefix, and the im2col walk of conv2d.c they share. No kernel allocates:
 * scratch comes in `ws` (bounded by bf_cpu_conv2d_ws_cap, never less than one
 * output row); backward ADDS into dw / db and OVERWRITES dinp (dinp, db may
 * be NULL). */
#ifndef BF_CPU_CONVX_H
#define BF_CPU_CONVX_H

#include "cpu_conv.h"

// col (M,ld) = rows r0 .. r0+M of the im2col matrix of inp (B,H,W,C); columns (kh,kw,c)
void bf_cpu_conv2d_im2col(float *col, const float *inp, const bf_conv_geom *g, long r0, int M, int ld);
// dinp (B,H,W,C) += col2im(dcol (M,ld)) for rows r0 .. r0+M
void bf_cpu_conv2d_col2im_add(float *dinp, float *dcol, const bf_conv_geom *g, long r0, int M, int ld);

/* positive sizes, D >= 1, 0 <= PL, OT >= 1 and int-sized samples */
bf_status bf_cpu_conv1d_check(const bf_conv1d_geom *g);
size_t bf_cpu_conv1d_workspace_bytes(bf_backend *be, const bf_conv1d_geom *g, int backward);
// out (B,OT,K) = conv(inp (B,T,C), w (KW,C,K)) dilated by D, left padding PL, + b (K)
bf_status bf_cpu_conv1d_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                const float *b, const bf_conv1d_geom *g);
// dinp (B,T,C) = conv^T(dout); dw (KW,C,K) += col^T @ dout; db (K) += sum dout
bf_status bf_cpu_conv1d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout,
                                 const float *inp, const float *w, const bf_conv1d_geom *g);

size_t bf_cpu_conv2d_transpose_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward);
// out (B,H,W,C) = col2im(inp (B,OH,OW,K) @ w^T) + b (C); w (KH,KW,C,K)
bf_status bf_cpu_conv2d_transpose_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                          const float *w, const float *b, const bf_conv_geom *g);
// dinp (B,OH,OW,K) = im2col(dout) @ w; dw += im2col(dout)^T @ inp; db (C) += sum dout
bf_status bf_cpu_conv2d_transpose_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                           const float *dout, const float *inp, const float *w,
                                           const bf_conv_geom *g);

#endif
