/* sim_dnn.cpp - the cuDNN stand-in of the device emulation: 2-D convolutions
 * (forward, backward data, backward filter) of NHWC float tensors with KRSC
 * (NHWC-format) filters, computed on the host with im2col and the CPU
 * backend's OpenBLAS GEMM (blas.h). The algorithm queries answer like cuDNN's
 * heuristics (a ranked list with workspace, determinism and math type, FFT
 * first so the caller's filter is exercised); every algorithm has a fixed
 * workspace formula, and a call given less workspace than its query reported
 * fails with CUDNN_STATUS_BAD_PARAM, as does a destroyed descriptor or handle,
 * a shape mismatch, or tensors outside device memory (which also fault).
 * The workspace passed is scribbled over (sim_scribble) before and after
 * every convolution, so one placed on a live tensor gives wrong numbers. A
 * call is checked at once and computed as work on the handle's stream
 * (sim_submit: at once, or when the stream runs). The descriptor's math type
 * decides how the operands are taken (sim_round.h): FMA exact float32,
 * DEFAULT and TENSOR_OP TF32 on compute capability 8.0 and later (cuDNN's
 * float32 tensor-core math there), TENSOR_OP_MATH_ALLOW_CONVERSION float16.
 * BF_SIM_FAIL=cudnn fails every convolution (CUDNN_STATUS_EXECUTION_FAILED). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <set>
#include <vector>

#include "blas.h"
#include "sim_internal.h"
#include "sim_round.h"

struct cudnnContext {
    cudaStream_t stream;
};
struct cudnnTensorStruct {
    int set, n, c, h, w;
    cudnnTensorFormat_t fmt;
};
struct cudnnFilterStruct {
    int set, k, c, h, w;
    cudnnTensorFormat_t fmt;
};
struct cudnnConvolutionStruct {
    int set, ph, pw, sh, sw, dh, dw;
    cudnnMathType_t math;
};

static std::set<const void *> live;
static char last_msg[256];

static cudnnStatus_t fail(cudnnStatus_t s, const char *msg) {
    snprintf(last_msg, sizeof last_msg, "%s", msg);
    return s;
}

size_t cudnnGetVersion(void) { return sim_cfg().cudnn; }
size_t cudnnGetCudartVersion(void) { return (size_t)sim_cfg().runtime; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
void cudnnGetLastErrorString(char *m, size_t n) {
    if (n) snprintf(m, n, "%s", last_msg);
    last_msg[0] = 0;
}

const char *cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

template <class T> static cudnnStatus_t create(T **out) {
    T *p = new T{};
    live.insert(p);
    *out = p;
    return CUDNN_STATUS_SUCCESS;
}
template <class T> static cudnnStatus_t destroy(T *p) {
    if (!p) return CUDNN_STATUS_SUCCESS;
    if (!live.erase(p)) return fail(CUDNN_STATUS_BAD_PARAM, "destroy of an unknown or destroyed object");
    delete p;
    return CUDNN_STATUS_SUCCESS;
}
static int ok(const void *p) { return p && live.count(p); }

cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
    if (sim_sticky()) return CUDNN_STATUS_NOT_INITIALIZED;
    return create(h);
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { return destroy(h); }
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    if (!sim_stream_ok(s)) return fail(CUDNN_STATUS_BAD_PARAM, "unknown stream");
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return destroy(d); }
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return destroy(d); }
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) { return create(d); }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return destroy(d); }

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n,
                                         int c, int h, int w) {
    if (!ok(d)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed tensor descriptor");
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || (long long)n * c * h * w > 0x7fffffffLL)
        return fail(CUDNN_STATUS_BAD_PARAM, "tensor dimensions <= 0 or over 2^31 elements");
    if (t != CUDNN_DATA_FLOAT) return fail(CUDNN_STATUS_NOT_SUPPORTED, "only float tensors are emulated");
    *d = cudnnTensorStruct{1, n, c, h, w, f};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int k,
                                         int c, int h, int w) {
    if (!ok(d)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed filter descriptor");
    if (k <= 0 || c <= 0 || h <= 0 || w <= 0) return fail(CUDNN_STATUS_BAD_PARAM, "filter dimensions <= 0");
    if (t != CUDNN_DATA_FLOAT) return fail(CUDNN_STATUS_NOT_SUPPORTED, "only float filters are emulated");
    *d = cudnnFilterStruct{1, k, c, h, w, f};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int sh, int sw, int dh,
                                              int dw, cudnnConvolutionMode_t, cudnnDataType_t) {
    if (!ok(d)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed convolution descriptor");
    if (ph < 0 || pw < 0 || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0)
        return fail(CUDNN_STATUS_BAD_PARAM, "negative padding or non-positive stride / dilation");
    *d = cudnnConvolutionStruct{1, ph, pw, sh, sw, dh, dw, CUDNN_DEFAULT_MATH};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) {
    if (!ok(d) || !d->set) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed or unset convolution descriptor");
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

/* how a convolution of descriptor d takes its float operands */
static sim_tc tc_of(const cudnnConvolutionStruct *d) {
    if (d->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return SIM_TC_F16;
    return d->math != CUDNN_FMA_MATH && sim_cfg().cc_major >= 8 ? SIM_TC_TF32 : SIM_TC_NONE;
}

static int out_dim(int in, int pad, int k, int s, int dil) { return (in + 2 * pad - ((k - 1) * dil + 1)) / s + 1; }

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t c,
                                                    const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
                                                    int *n, int *k, int *h, int *wo) {
    if (!ok(c) || !ok(x) || !ok(w) || !c->set || !x->set || !w->set)
        return fail(CUDNN_STATUS_BAD_PARAM, "destroyed or unset descriptor");
    if (w->c != x->c) return fail(CUDNN_STATUS_BAD_PARAM, "filter and input channel counts differ");
    *n = x->n;
    *k = w->k;
    *h = out_dim(x->h, c->ph, w->h, c->sh, c->dh);
    *wo = out_dim(x->w, c->pw, w->w, c->sw, c->dw);
    return CUDNN_STATUS_SUCCESS;
}

/* the whole geometry of a call, checked */
struct geom {
    int N, H, W, C, K, R, S, OH, OW, ph, pw, sh, sw, dh, dw;
};

static cudnnStatus_t get_geom(const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
                              const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y, geom *g) {
    if (!ok(c) || !ok(x) || !ok(w) || !ok(y) || !c->set || !x->set || !w->set || !y->set)
        return fail(CUDNN_STATUS_BAD_PARAM, "destroyed or unset descriptor");
    if (x->fmt != CUDNN_TENSOR_NHWC || y->fmt != CUDNN_TENSOR_NHWC || w->fmt != CUDNN_TENSOR_NHWC)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, "the emulation computes NHWC tensors with NHWC (KRSC) filters");
    int n, k, h, wo;
    cudnnStatus_t s = cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &k, &h, &wo);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (y->n != n || y->c != k || y->h != h || y->w != wo)
        return fail(CUDNN_STATUS_BAD_PARAM, "output descriptor does not match the convolution's output");
    *g = geom{x->n, x->h, x->w, x->c, w->k, w->h, w->w, h, wo, c->ph, c->pw, c->sh, c->sw, c->dh, c->dw};
    return CUDNN_STATUS_SUCCESS;
}

/* an FFT's workspace: padded input and output transforms, complex */
static size_t fft_ws(const geom &g) {
    return sizeof(float) * 2 * (size_t)g.N * (g.H + 2 * g.ph) * (g.W + 2 * g.pw) * (g.C + g.K);
}

/* workspace of each algorithm (bytes); (size_t)-1: not supported for g */
static size_t fwd_ws(const geom &g, int algo) {
    const size_t P = (size_t)g.OH * g.OW, KK = (size_t)g.R * g.S * g.C;
    switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return 0;
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return sizeof(int) * (size_t)g.R * g.S * g.C + 4096;
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return sizeof(float) * P * KK * g.N;
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
        return g.sh == 1 && g.sw == 1 && g.dh == 1 ? fft_ws(g) : (size_t)-1;
    default: return (size_t)-1;
    }
}
static size_t bwd_data_ws(const geom &g, int algo) {
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return 0;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return sizeof(float) * (size_t)g.K * g.R * g.S * g.C;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
        return g.sh == 1 && g.sw == 1 ? fft_ws(g) : (size_t)-1;
    default: return (size_t)-1;
    }
}
static size_t bwd_filter_ws(const geom &g, int algo) {
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return 0;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return sizeof(float) * (size_t)g.K * g.R * g.S * g.C + 4096;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return sizeof(float) * (size_t)g.OH * g.OW * g.R * g.S * g.C;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
        return g.sh == 1 && g.sw == 1 ? fft_ws(g) : (size_t)-1;
    default: return (size_t)-1;
    }
}

/* ranked lists, like the heuristics: an FFT (filtered out by the caller), a
 * tensor-op entry (not exact FP32), then the exact ones */
template <class Perf, class Algo>
static void fill(Perf *out, int req, int *got, const geom &g, const int *algos, const int *det, const int *tensor,
                 int n, size_t (*ws)(const geom &, int)) {
    int m = 0;
    for (int i = 0; i < n && m < req; i++) {
        Perf p;
        memset(&p, 0, sizeof p);
        p.algo = (Algo)algos[i];
        size_t b = ws(g, algos[i]);
        p.status = b == (size_t)-1 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
        p.memory = b == (size_t)-1 ? 0 : b;
        p.time = -1.0f;
        p.determinism = det[i] ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
        p.mathType = tensor[i] ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
        out[m++] = p;
    }
    *got = m;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t c,
                                                     const cudnnTensorDescriptor_t y, const int req, int *got,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    static const int a[] = {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                            CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
    static const int d[] = {1, 1, 1, 1, 1}, t[] = {0, 1, 0, 0, 0};
    fill<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(perf, req, got, g, a, d, t, 5, fwd_ws);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                                          const cudnnTensorDescriptor_t y,
                                                          const cudnnConvolutionDescriptor_t c,
                                                          const cudnnTensorDescriptor_t x, const int req, int *got,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *perf) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    static const int a[] = {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_1};
    static const int d[] = {1, 0, 1}, t[] = {0, 0, 0};
    fill<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(perf, req, got, g, a, d, t, 3, bwd_data_ws);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                            const cudnnTensorDescriptor_t y,
                                                            const cudnnConvolutionDescriptor_t c,
                                                            const cudnnFilterDescriptor_t w, const int req, int *got,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    static const int a[] = {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3};
    static const int d[] = {1, 0, 1, 1}, t[] = {0, 0, 0, 0};
    fill<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(perf, req, got, g, a, d, t, 4,
                                                                               bwd_filter_ws);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t c,
                                                      const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t a,
                                                      size_t *bytes) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    size_t b = fwd_ws(g, a);
    if (b == (size_t)-1) return fail(CUDNN_STATUS_NOT_SUPPORTED, "algorithm not supported for this geometry");
    *bytes = b;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                                           const cudnnTensorDescriptor_t y,
                                                           const cudnnConvolutionDescriptor_t c,
                                                           const cudnnTensorDescriptor_t x,
                                                           cudnnConvolutionBwdDataAlgo_t a, size_t *bytes) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    size_t b = bwd_data_ws(g, a);
    if (b == (size_t)-1) return fail(CUDNN_STATUS_NOT_SUPPORTED, "algorithm not supported for this geometry");
    *bytes = b;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                             const cudnnTensorDescriptor_t y,
                                                             const cudnnConvolutionDescriptor_t c,
                                                             const cudnnFilterDescriptor_t w,
                                                             cudnnConvolutionBwdFilterAlgo_t a, size_t *bytes) {
    geom g;
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    cudnnStatus_t s = get_geom(x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    size_t b = bwd_filter_ws(g, a);
    if (b == (size_t)-1) return fail(CUDNN_STATUS_NOT_SUPPORTED, "algorithm not supported for this geometry");
    *bytes = b;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the computation ---- */

/* col (OH*OW, R*S*C) of sample x (H,W,C) */
static void im2col(float *col, const float *x, const geom &g) {
    const int KK = g.R * g.S * g.C;
    for (int oh = 0; oh < g.OH; oh++)
        for (int ow = 0; ow < g.OW; ow++) {
            float *row = col + ((size_t)oh * g.OW + ow) * KK;
            for (int r = 0; r < g.R; r++) {
                const int ih = oh * g.sh - g.ph + r * g.dh;
                for (int s = 0; s < g.S; s++) {
                    const int iw = ow * g.sw - g.pw + s * g.dw;
                    float *d = row + (r * g.S + s) * g.C;
                    if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) memset(d, 0, sizeof(float) * g.C);
                    else memcpy(d, x + ((size_t)ih * g.W + iw) * g.C, sizeof(float) * g.C);
                }
            }
        }
}

/* dx (H,W,C) += col2im(dcol) */
static void col2im_add(float *dx, const float *col, const geom &g) {
    const int KK = g.R * g.S * g.C;
    for (int oh = 0; oh < g.OH; oh++)
        for (int ow = 0; ow < g.OW; ow++) {
            const float *row = col + ((size_t)oh * g.OW + ow) * KK;
            for (int r = 0; r < g.R; r++) {
                const int ih = oh * g.sh - g.ph + r * g.dh;
                if (ih < 0 || ih >= g.H) continue;
                for (int s = 0; s < g.S; s++) {
                    const int iw = ow * g.sw - g.pw + s * g.dw;
                    if (iw < 0 || iw >= g.W) continue;
                    float *d = dx + ((size_t)ih * g.W + iw) * g.C;
                    const float *v = row + (r * g.S + s) * g.C;
                    for (int c = 0; c < g.C; c++) d[c] += v[c];
                }
            }
        }
}

/* the arguments every compute call shares; SUCCESS to compute */
static cudnnStatus_t run_check(cudnnHandle_t h, const geom &g, const char *what, size_t need, const void *ws,
                               size_t ws_bytes, const float *alpha, const float *beta, const void *x, const void *w,
                               const void *y) {
    if (!ok(h)) return fail(CUDNN_STATUS_BAD_PARAM, "destroyed handle");
    if (sim_sticky()) return fail(CUDNN_STATUS_EXECUTION_FAILED, "the CUDA context has a sticky error");
    const char *inject = getenv("BF_SIM_FAIL");
    if (inject && !strcmp(inject, "cudnn"))
        return fail(CUDNN_STATUS_EXECUTION_FAILED, "injected failure (BF_SIM_FAIL=cudnn)");
    if (need == (size_t)-1) return fail(CUDNN_STATUS_NOT_SUPPORTED, "algorithm not supported for this geometry");
    if (ws_bytes < need) {
        char m[200];
        snprintf(m, sizeof m, "%s: workspace of %zu bytes, the algorithm needs %zu", what, ws_bytes, need);
        return fail(CUDNN_STATUS_BAD_PARAM, m);
    }
    if (!alpha || !beta || sim_is_device(alpha) || sim_is_device(beta))
        return fail(CUDNN_STATUS_BAD_PARAM, "alpha / beta must be host pointers");
    const size_t xs = sizeof(float) * (size_t)g.N * g.H * g.W * g.C,
                 ys = sizeof(float) * (size_t)g.N * g.OH * g.OW * g.K,
                 wsz = sizeof(float) * (size_t)g.K * g.R * g.S * g.C;
    if (!sim_device_range(x, xs) || !sim_device_range(w, wsz) || !sim_device_range(y, ys) ||
        (ws_bytes && !sim_device_range(ws, ws_bytes))) {
        bf_sim_fault(cudaErrorIllegalAddress, what, "a tensor or the workspace outside every live device allocation");
        return fail(CUDNN_STATUS_EXECUTION_FAILED, "illegal address");
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd,
                                      const void *x, const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t algo, void *ws,
                                      size_t ws_bytes, const void *beta, const cudnnTensorDescriptor_t yd, void *y) {
    geom g;
    cudnnStatus_t s = get_geom(xd, wd, cd, yd, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    s = run_check(h, g, "cudnnConvolutionForward", fwd_ws(g, algo), ws, ws_bytes, (const float *)alpha,
                  (const float *)beta, x, w, y);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const sim_tc tc = tc_of(cd);
    sim_submit(h->stream, [=] {
        sim_scribble(ws, ws_bytes); /* the caller's inputs must not live there */
        const int P = g.OH * g.OW, KK = g.R * g.S * g.C;
        std::vector<float> col((size_t)P * KK), xb, wb;
        const float *xr = sim_tc_operand(xb, (const float *)x, (size_t)g.N * g.H * g.W * g.C, tc);
        const float *wr = sim_tc_operand(wb, (const float *)w, (size_t)g.K * KK, tc);
        for (int n = 0; n < g.N; n++) {
            im2col(col.data(), xr + (size_t)n * g.H * g.W * g.C, g);
            bf_sgemm1(0, 1, P, g.K, KK, a, col.data(), KK, wr, KK, b, (float *)y + (size_t)n * P * g.K, g.K);
        }
        sim_scribble(ws, ws_bytes);
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd,
                                             const void *x, const cudnnTensorDescriptor_t dyd, const void *dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_bytes,
                                             const void *beta, const cudnnFilterDescriptor_t dwd, void *dw) {
    geom g;
    cudnnStatus_t s = get_geom(xd, dwd, cd, dyd, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    s = run_check(h, g, "cudnnConvolutionBackwardFilter", bwd_filter_ws(g, algo), ws, ws_bytes, (const float *)alpha,
                  (const float *)beta, x, dw, dy);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const sim_tc tc = tc_of(cd);
    sim_submit(h->stream, [=] {
        sim_scribble(ws, ws_bytes);
        const int P = g.OH * g.OW, KK = g.R * g.S * g.C;
        std::vector<float> col((size_t)P * KK), xb, yb;
        const float *xr = sim_tc_operand(xb, (const float *)x, (size_t)g.N * g.H * g.W * g.C, tc);
        const float *dyr = sim_tc_operand(yb, (const float *)dy, (size_t)g.N * P * g.K, tc);
        for (int n = 0; n < g.N; n++) {
            im2col(col.data(), xr + (size_t)n * g.H * g.W * g.C, g);
            bf_sgemm1(1, 0, g.K, KK, P, a, dyr + (size_t)n * P * g.K, g.K, col.data(), KK, n ? 1.0f : b, (float *)dw,
                      KK);
        }
        sim_scribble(ws, ws_bytes);
    });
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, const cudnnFilterDescriptor_t wd,
                                           const void *w, const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const cudnnConvolutionDescriptor_t cd, cudnnConvolutionBwdDataAlgo_t algo,
                                           void *ws, size_t ws_bytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxd, void *dx) {
    geom g;
    cudnnStatus_t s = get_geom(dxd, wd, cd, dyd, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    s = run_check(h, g, "cudnnConvolutionBackwardData", bwd_data_ws(g, algo), ws, ws_bytes, (const float *)alpha,
                  (const float *)beta, dx, w, dy);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const sim_tc tc = tc_of(cd);
    sim_submit(h->stream, [=] {
        sim_scribble(ws, ws_bytes);
        const int P = g.OH * g.OW, KK = g.R * g.S * g.C;
        const size_t xs = (size_t)g.H * g.W * g.C;
        std::vector<float> col((size_t)P * KK), tmp(xs), yb, wb;
        const float *dyr = sim_tc_operand(yb, (const float *)dy, (size_t)g.N * P * g.K, tc);
        const float *wr = sim_tc_operand(wb, (const float *)w, (size_t)g.K * KK, tc);
        for (int n = 0; n < g.N; n++) {
            bf_sgemm1(0, 0, P, KK, g.K, 1.0f, dyr + (size_t)n * P * g.K, g.K, wr, KK, 0.0f, col.data(), KK);
            std::fill(tmp.begin(), tmp.end(), 0.0f);
            col2im_add(tmp.data(), col.data(), g);
            float *d = (float *)dx + n * xs;
            for (size_t i = 0; i < xs; i++) d[i] = b == 0.0f ? a * tmp[i] : a * tmp[i] + b * d[i];
        }
        sim_scribble(ws, ws_bytes);
    });
    return CUDNN_STATUS_SUCCESS;
}
