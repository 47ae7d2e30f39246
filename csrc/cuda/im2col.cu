/* im2col.cu - im2col and gathering col2im for Conv1D and Conv2DTranspose
 * (cuda_convx.h): images (nb,H,W,C), im2col rows (b,oh,ow), columns (kh,kw,c),
 * tap (kh,kw) of output (oh,ow) at input (oh*SH - PT + kh*DH, ow*SW - PL + kw*DW),
 * zeros outside the image. col2im gives each input cell the sum over the taps
 * that read it (one thread per cell: no atomics, deterministic). */
#include "cuda_convx.h"

int bf_cuda_im2col_chunk(const bf_cuda_im2col_geom *q, int B) {
    const size_t per = (size_t)q->OH * q->OW * q->KH * q->KW * q->C * sizeof(float);
    size_t nb = per ? BF_CUDA_CONVX_CAP / per : (size_t)B;
    if (nb < 1) nb = 1;
    return nb > (size_t)B ? B : (int)nb;
}

// col (nb*OH*OW, KH*KW*C) = im2col(img (nb,H,W,C))
__global__ void im2col_kernel(float *col, const float *img, long n, bf_cuda_im2col_geom q) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % q.C);
        long r = i / q.C;
        const int kw = (int)(r % q.KW);
        r /= q.KW;
        const int kh = (int)(r % q.KH);
        r /= q.KH;
        const int ow = (int)(r % q.OW);
        r /= q.OW;
        const int oh = (int)(r % q.OH);
        const long b = r / q.OH;
        const int ih = oh * q.SH - q.PT + kh * q.DH, iw = ow * q.SW - q.PL + kw * q.DW;
        col[i] = ih >= 0 && ih < q.H && iw >= 0 && iw < q.W ? img[((b * q.H + ih) * q.W + iw) * q.C + c] : 0.0f;
    }
}

// img (nb,H,W,C) = sum of the taps of col (nb*OH*OW, KH*KW*C) that read each cell
__global__ void col2im_kernel(float *img, const float *col, long n, bf_cuda_im2col_geom q) {
    const long kk = (long)q.KH * q.KW * q.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % q.C);
        long r = i / q.C;
        const int w = (int)(r % q.W);
        r /= q.W;
        const int h = (int)(r % q.H);
        const long b = r / q.H;
        float s = 0.0f;
        for (int kh = 0; kh < q.KH; kh++) {
            const int nh = h + q.PT - kh * q.DH;
            if (nh < 0 || nh % q.SH) continue;
            const int oh = nh / q.SH;
            if (oh >= q.OH) continue;
            for (int kw = 0; kw < q.KW; kw++) {
                const int nw = w + q.PL - kw * q.DW;
                if (nw < 0 || nw % q.SW) continue;
                const int ow = nw / q.SW;
                if (ow >= q.OW) continue;
                s += col[((b * q.OH + oh) * q.OW + ow) * kk + ((long)kh * q.KW + kw) * q.C + c];
            }
        }
        img[i] = s;
    }
}

bf_status bf_cuda_im2col(bf_cuda_state *st, float *col, const float *img, int nb, const bf_cuda_im2col_geom *q) {
    const long n = (long)nb * q->OH * q->OW * q->KH * q->KW * q->C;
    im2col_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(col, img, n, *q);
    BF_CUDA_LAUNCHED(st, im2col_kernel);
    return BF_OK;
}

bf_status bf_cuda_col2im(bf_cuda_state *st, float *img, const float *col, int nb, const bf_cuda_im2col_geom *q) {
    const long n = (long)nb * q->H * q->W * q->C;
    col2im_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(img, col, n, *q);
    BF_CUDA_LAUNCHED(st, col2im_kernel);
    return BF_OK;
}
