/* cuda_convx.h - the im2col / col2im kernels (im2col.cu) that Conv1D
 * (conv1d.cu) and Conv2DTranspose (conv2d_transpose.cu) share on the GPU;
 * their ops are in cuda_ops.h. Both are im2col +
 * cuBLAS GEMMs in exact FP32, run in chunks of whole samples whose im2col
 * matrix fits BF_CUDA_CONVX_CAP bytes (at least one sample), so the
 * workspace (one chunk's im2col matrix) does not grow with B beyond it.
 * col2im gathers (each input cell sums its taps): deterministic, no atomics.
 * cuDNN is not used here: it pads symmetrically (Conv1D 'causal' is one-sided)
 * and a transposed conv is two GEMMs around the same im2col. */
#ifndef BF_CUDA_CONVX_H
#define BF_CUDA_CONVX_H

#include "cuda_check.h"

#define BF_CUDA_CONVX_CAP ((size_t)64 << 20)

/* a convolution of images (H,W,C) into (OH,OW,*) with window KH x KW,
 * strides SH x SW, dilation DH x DW and top / left padding PT / PL */
typedef struct {
    int H, W, C, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL;
} bf_cuda_im2col_geom;

/* samples per chunk: the im2col matrix of nb samples within the cap */
int bf_cuda_im2col_chunk(const bf_cuda_im2col_geom *q, int B);
// col (nb*OH*OW, KH*KW*C) = im2col(img (nb,H,W,C)); columns (kh,kw,c)
bf_status bf_cuda_im2col(bf_cuda_state *st, float *col, const float *img, int nb, const bf_cuda_im2col_geom *q);
// img (nb,H,W,C) = col2im(col (nb*OH*OW, KH*KW*C)): every cell the sum of its taps
bf_status bf_cuda_col2im(bf_cuda_state *st, float *img, const float *col, int nb, const bf_cuda_im2col_geom *q);

#endif
