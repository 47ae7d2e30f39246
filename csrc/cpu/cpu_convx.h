/* cpu_convx.h - what CPU Conv1D (conv1d.c) and Conv2DTranspose
 * (conv2d_transpose.c) share with conv2d.c besides their ops (cpu_ops.h):
 * the im2col walk, and Conv1D's geometry check. No kernel allocates:
 * scratch comes in `ws` (bounded by bf_cpu_conv2d_ws_cap, never less than one
 * output row). */
#ifndef BF_CPU_CONVX_H
#define BF_CPU_CONVX_H

#include "cpu_conv.h"

// col (M,ld) = rows r0 .. r0+M of the im2col matrix of inp (B,H,W,C); columns (kh,kw,c)
void bf_cpu_conv2d_im2col(float *col, const float *inp, const bf_conv_geom *g, long r0, int M, int ld);
// dinp (B,H,W,C) += col2im(dcol (M,ld)) for rows r0 .. r0+M
void bf_cpu_conv2d_col2im_add(float *dinp, float *dcol, const bf_conv_geom *g, long r0, int M, int ld);

/* positive sizes, D >= 1, 0 <= PL, OT >= 1 and int-sized samples */
bf_status bf_cpu_conv1d_check(const bf_conv1d_geom *g);

#endif
