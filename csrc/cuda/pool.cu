/* pool.cu - max and average pooling, NHWC, Keras semantics, as
 * csrc/cpu/pool.c: the window of output (oh, ow) covers input rows
 * oh*SH - PT .. + KH-1 and columns ow*SW - PL .. + KW-1 clipped to the image,
 * so padded cells never count (max ignores them, average divides by the valid
 * count). Own kernels rather than cuDNN: cuDNN pads symmetrically (Keras
 * 'same' may not) and may route max gradients differently. Backward is a
 * gather, one thread per input cell over the windows that contain it (in
 * (oh, ow) order), so it OVERWRITES dinp without atomics and is deterministic;
 * max routes each window's gradient to its first maximum in row-major window
 * order, recomputed from inp and out. Channels are the fastest index. */
#include "cuda_ops.h"
#include "window.cuh"

// out (B,OH,OW,C) = max over the valid cells of each window of inp (B,H,W,C)
__global__ void maxpool_forward_kernel(float *out, const float *inp, bf_conv_geom g) {
    const long n = (long)g.B * g.OH * g.OW * g.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const bf_win_cell e = bf_win_at(i, g.C, g);
        const int h0 = e.h0, h1 = e.h1, w0 = e.w0, w1 = e.w1;
        const float *im = inp + e.b * g.H * g.W * g.C + e.q;
        float o = im[((long)h0 * g.W + w0) * g.C];
        for (int ih = h0; ih < h1; ih++)
            for (int iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
                const float x = im[((long)ih * g.W + iw) * g.C];
                o = x > o ? x : o;
            }
        out[i] = o;
    }
}

// dinp (B,H,W,C) = dout (B,OH,OW,C) routed to the first max of each window
__global__ void maxpool_backward_kernel(float *dinp, const float *dout, const float *out,
                                        const float *inp, bf_conv_geom g) {
    const long n = (long)g.B * g.H * g.W * g.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % g.C);
        long r = i / g.C;
        const int iw = (int)(r % g.W);
        r /= g.W;
        const int ih = (int)(r % g.H);
        const long b = r / g.H;
        const float *im = inp + b * g.H * g.W * g.C + c;
        const float x = inp[i];
        float dx = 0.0f;
        int oh0, oh1, ow0, ow1;
        bf_win_covering(ih, g.KH, g.SH, g.PT, g.OH, &oh0, &oh1);
        bf_win_covering(iw, g.KW, g.SW, g.PL, g.OW, &ow0, &ow1);
        for (int oh = oh0; oh < oh1; oh++)
            for (int ow = ow0; ow < ow1; ow++) {
                const long oi = ((b * g.OH + oh) * g.OW + ow) * g.C + c;
                const float o = out[oi];
                if (!(x == o)) continue;
                /* first hit of this window: no earlier cell equals the max */
                int h0, h1, w0, w1, first = 1;
                bf_win_clip(oh * g.SH - g.PT, g.KH, g.H, &h0, &h1);
                bf_win_clip(ow * g.SW - g.PL, g.KW, g.W, &w0, &w1);
                for (int hh = h0; hh <= ih && first; hh++)
                    for (int ww = w0; ww < (hh == ih ? iw : w1); ww++)
                        if (im[((long)hh * g.W + ww) * g.C] == o) {
                            first = 0;
                            break;
                        }
                if (first) dx += dout[oi];
            }
        dinp[i] = dx;
    }
}

// out (B,OH,OW,C) = mean over the valid cells of each window of inp (B,H,W,C)
__global__ void avgpool_forward_kernel(float *out, const float *inp, bf_conv_geom g) {
    const long n = (long)g.B * g.OH * g.OW * g.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const bf_win_cell e = bf_win_at(i, g.C, g);
        const int h0 = e.h0, h1 = e.h1, w0 = e.w0, w1 = e.w1;
        const float *im = inp + e.b * g.H * g.W * g.C + e.q;
        float o = 0.0f;
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) o += im[((long)ih * g.W + iw) * g.C];
        out[i] = __fmul_rn(o, 1.0f / (float)((h1 - h0) * (w1 - w0)));
    }
}

// dinp (B,H,W,C) = sum over the windows containing the cell of dout / count
__global__ void avgpool_backward_kernel(float *dinp, const float *dout, bf_conv_geom g) {
    const long n = (long)g.B * g.H * g.W * g.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % g.C);
        long r = i / g.C;
        const int iw = (int)(r % g.W);
        r /= g.W;
        const int ih = (int)(r % g.H);
        const long b = r / g.H;
        float dx = 0.0f;
        int oh0, oh1, ow0, ow1;
        bf_win_covering(ih, g.KH, g.SH, g.PT, g.OH, &oh0, &oh1);
        bf_win_covering(iw, g.KW, g.SW, g.PL, g.OW, &ow0, &ow1);
        for (int oh = oh0; oh < oh1; oh++) {
            int h0, h1;
            bf_win_clip(oh * g.SH - g.PT, g.KH, g.H, &h0, &h1);
            for (int ow = ow0; ow < ow1; ow++) {
                int w0, w1;
                bf_win_clip(ow * g.SW - g.PL, g.KW, g.W, &w0, &w1);
                const float inv = 1.0f / (float)((h1 - h0) * (w1 - w0));
                dx += __fmul_rn(dout[((b * g.OH + oh) * g.OW + ow) * g.C + c], inv);
            }
        }
        dinp[i] = dx;
    }
}

/* GlobalAveragePooling2D (window = whole image, unpadded): out (B,1,1,C) */
// out (B,C) = mean over H*W of inp (B,H*W,C); one thread per (b, c)
__global__ void global_avgpool_forward_kernel(float *out, const float *inp, long B, long HW, int C) {
    const long n = B * C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long b = i / C;
        const int c = (int)(i % C);
        const float *x = inp + b * HW * C + c;
        float o = 0.0f;
        for (long k = 0; k < HW; k++) o += x[k * C];
        out[i] = __fmul_rn(o, 1.0f / (float)HW);
    }
}

static int is_global(const bf_conv_geom *g) {
    return g->KH == g->H && g->KW == g->W && g->OH == 1 && g->OW == 1 && g->PT == 0 && g->PL == 0;
}

static bf_status pool_check(const bf_conv_geom *g, const char *op, const void *a, const void *b) {
    BF_TRY(bf_cuda_check_geom(g, op, 1));
    if (!a || !b) return BF_FAIL(BF_ERR_ARG, "%s: NULL tensor", op);
    return BF_OK;
}

bf_status bf_cuda_maxpool_forward(bf_backend *be, float *out, const float *inp,
                                  const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(pool_check(g, "maxpool_forward", out, inp));
    const long n = (long)g->B * g->OH * g->OW * g->C;
    maxpool_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, *g);
    BF_CUDA_LAUNCHED(st, maxpool_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_maxpool_backward(bf_backend *be, float *dinp, const float *dout,
                                   const float *out, const float *inp, const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bf_cuda_check_geom(g, "maxpool_backward", 1));
    if (!dinp) return BF_OK;
    if (!dout || !out || !inp) return BF_FAIL(BF_ERR_ARG, "maxpool_backward: NULL tensor");
    const long n = (long)g->B * g->H * g->W * g->C;
    maxpool_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, out, inp, *g);
    BF_CUDA_LAUNCHED(st, maxpool_backward_kernel);
    return BF_OK;
}

bf_status bf_cuda_avgpool_forward(bf_backend *be, float *out, const float *inp,
                                  const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(pool_check(g, "avgpool_forward", out, inp));
    if (is_global(g)) {
        const long n = (long)g->B * g->C;
        global_avgpool_forward_kernel<<<bf_cuda_grid(n, 128), 128, 0, st->stream>>>(
            out, inp, g->B, (long)g->H * g->W, g->C);
        BF_CUDA_LAUNCHED(st, global_avgpool_forward_kernel);
        return BF_OK;
    }
    const long n = (long)g->B * g->OH * g->OW * g->C;
    avgpool_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, *g);
    BF_CUDA_LAUNCHED(st, avgpool_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_avgpool_backward(bf_backend *be, float *dinp, const float *dout,
                                   const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bf_cuda_check_geom(g, "avgpool_backward", 1));
    if (!dinp) return BF_OK;
    if (!dout) return BF_FAIL(BF_ERR_ARG, "avgpool_backward: NULL tensor");
    const long n = (long)g->B * g->H * g->W * g->C;
    avgpool_backward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, *g);
    BF_CUDA_LAUNCHED(st, avgpool_backward_kernel);
    return BF_OK;
}
