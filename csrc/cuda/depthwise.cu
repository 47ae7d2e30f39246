/* depthwise.cu - DepthwiseConv2D, NHWC, Keras semantics, as
 * csrc/cpu/depthwise.c: input (B,H,W,C), kernel (KH,KW,C,M), output
 * (B,OH,OW,C*M), output channel c*M + m. Own kernels (cuDNN's grouped
 * convolution pads symmetrically; Keras 'same' may not). Forward: one thread
 * per output cell. Backward-data: a gather, one thread per input cell over the
 * windows that contain it, OVERWRITING dinp without atomics. Backward-filter:
 * one block per kernel cell, its threads striding over (b, oh, ow) and a
 * fixed-shape tree in shared memory, ADDED into dw; db through the column sum;
 * dinp, dw, db may each be NULL.
 * Every sum has a fixed order: the same bits run to run. */
#include "cuda_ops.h"
#include "window.cuh"

#define BF_DW_THREADS 256

// out (B,OH,OW,K) = sum over the window of inp (B,H,W,C)[.., q/M] * w (KH,KW,K)[.., q] + b (K)
__global__ void depthwise_forward_kernel(float *out, const float *inp, const float *w, const float *b,
                                         bf_conv_geom g) {
    const int M = g.K / g.C;
    const long n = (long)g.B * g.OH * g.OW * g.K;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const bf_win_cell e = bf_win_at(i, g.K, g);
        const int q = e.q, oh = e.oh, ow = e.ow, h0 = e.h0, h1 = e.h1, w0 = e.w0, w1 = e.w1;
        const float *im = inp + e.b * g.H * g.W * g.C + q / M;
        float o = b ? b[q] : 0.0f;
        for (int ih = h0; ih < h1; ih++) {
            const int kh = ih - (oh * g.SH - g.PT);
            for (int iw = w0; iw < w1; iw++) {
                const int kw = iw - (ow * g.SW - g.PL);
                o = __fadd_rn(o, __fmul_rn(im[((long)ih * g.W + iw) * g.C], w[((long)kh * g.KW + kw) * g.K + q]));
            }
        }
        out[i] = o;
    }
}

// dinp (B,H,W,C) = sum over the windows containing the cell and the M outputs of c of dout * w
__global__ void depthwise_backward_data_kernel(float *dinp, const float *dout, const float *w, bf_conv_geom g) {
    const int M = g.K / g.C;
    const long n = (long)g.B * g.H * g.W * g.C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % g.C);
        long r = i / g.C;
        const int iw = (int)(r % g.W);
        r /= g.W;
        const int ih = (int)(r % g.H);
        const long bi = r / g.H;
        int oh0, oh1, ow0, ow1;
        bf_win_covering(ih, g.KH, g.SH, g.PT, g.OH, &oh0, &oh1);
        bf_win_covering(iw, g.KW, g.SW, g.PL, g.OW, &ow0, &ow1);
        float dx = 0.0f;
        for (int oh = oh0; oh < oh1; oh++) {
            const int kh = ih - (oh * g.SH - g.PT);
            for (int ow = ow0; ow < ow1; ow++) {
                const int kw = iw - (ow * g.SW - g.PL);
                const float *d = dout + ((bi * g.OH + oh) * g.OW + ow) * g.K + (long)c * M;
                const float *k = w + ((long)kh * g.KW + kw) * g.K + (long)c * M;
                for (int m = 0; m < M; m++) dx = __fadd_rn(dx, __fmul_rn(d[m], k[m]));
            }
        }
        dinp[i] = dx;
    }
}

// dw (KH,KW,K) += sum over (b, oh, ow) of inp[.., q/M] * dout[.., q]; block j = kernel cell j
__global__ void depthwise_backward_filter_kernel(float *dw, const float *dout, const float *inp, bf_conv_geom g) {
    __shared__ float part[BF_DW_THREADS];
    const int M = g.K / g.C;
    const long j = blockIdx.x;
    const int q = (int)(j % g.K), c = q / M;
    const int kw = (int)((j / g.K) % g.KW), kh = (int)(j / ((long)g.K * g.KW));
    const long n = (long)g.B * g.OH * g.OW;
    float acc = 0.0f;
    for (long p = threadIdx.x; p < n; p += blockDim.x) {
        const int ow = (int)(p % g.OW);
        const int oh = (int)((p / g.OW) % g.OH);
        const long bi = p / ((long)g.OW * g.OH);
        const int ih = oh * g.SH - g.PT + kh, iw = ow * g.SW - g.PL + kw;
        if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
        acc = __fadd_rn(acc, __fmul_rn(inp[((bi * g.H + ih) * g.W + iw) * g.C + c], dout[p * g.K + q]));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BF_DW_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) part[threadIdx.x] = __fadd_rn(part[threadIdx.x], part[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) dw[j] = __fadd_rn(dw[j], part[0]);
}

static bf_status dw_check(const bf_conv_geom *g, const char *op, const void *a, const void *b, const void *w) {
    BF_TRY(bf_cuda_check_geom(g, op, 0));
    if (g->K % g->C != 0)
        return BF_FAIL(BF_ERR_SHAPE, "%s: output channels %d are not a multiple of input channels %d", op, g->K,
                       g->C);
    if (!a || !b || !w) return BF_FAIL(BF_ERR_ARG, "%s: NULL tensor", op);
    return BF_OK;
}

bf_status bf_cuda_depthwise_forward(bf_backend *be, float *out, const float *inp, const float *w,
                                    const float *b, const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(dw_check(g, "depthwise_conv2d", out, inp, w));
    const long n = (long)g->B * g->OH * g->OW * g->K;
    depthwise_forward_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(out, inp, w, b, *g);
    BF_CUDA_LAUNCHED(st, depthwise_forward_kernel);
    return BF_OK;
}

bf_status bf_cuda_depthwise_backward(bf_backend *be, float *dinp, float *dw, float *db, const float *dout,
                                     const float *inp, const float *w, const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(dw_check(g, "depthwise_conv2d backward", dout, inp, w));
    if (dinp) {
        const long n = (long)g->B * g->H * g->W * g->C;
        depthwise_backward_data_kernel<<<bf_cuda_grid(n, 256), 256, 0, st->stream>>>(dinp, dout, w, *g);
        BF_CUDA_LAUNCHED(st, depthwise_backward_data_kernel);
    }
    if (dw) {
        const long cells = (long)g->KH * g->KW * g->K;
        depthwise_backward_filter_kernel<<<(unsigned)cells, BF_DW_THREADS, 0, st->stream>>>(dw, dout, inp, *g);
        BF_CUDA_LAUNCHED(st, depthwise_backward_filter_kernel);
    }
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, dout, (long)g->B * g->OH * g->OW, g->K));
    return BF_OK;
}
