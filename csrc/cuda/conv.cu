/* conv.cu - Conv2D with cuDNN, NHWC. Layouts: inp (B,H,W,C), out (B,OH,OW,K),
 * Keras kernel (KH,KW,C,K). cuDNN's NHWC filter layout is KRSC (K,KH,KW,C), so
 * each call transposes the kernel into the workspace (and backward adds the
 * KRSC filter gradient back, transposed, into dw: backward ADDS into dw / db
 * and OVERWRITES dinp; dinp, dw and db may be NULL).
 * cuDNN pads symmetrically; Keras 'same' puts the odd pixel at the bottom /
 * right. When the symmetric form does not give Keras's output size the input
 * is zero-padded into the workspace (HP x WP) and convolved unpadded, and
 * backward crops the input gradient back.
 * Descriptors and algorithms are cached per geometry (bf_cuda_conv_plan in
 * the device state). Algorithms come from cuDNN's heuristics (no timing, so
 * the choice is deterministic), evaluated for a fixed reference batch so that
 * the choice does not depend on B: a smaller last batch uses the same
 * algorithms and, as their workspaces grow with B, no more workspace than
 * planned. FFT and non-fused Winograd (large, batch-proportional workspaces)
 * are excluded, backward algorithms must be deterministic. The math type is
 * part of a plan's key (conv_math): exact FP32 (CUDNN_FMA_MATH), TF32 where
 * the user allows it or for a mixed_bfloat16 node (CUDNN_DEFAULT_MATH:
 * bfloat16 values are exact in TF32; cuDNN converts float32 data to float16
 * only), float16 tensor cores for a mixed_float16 node
 * (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: its input and output gradient hold
 * float16 values, the kernel is rounded as Keras casts it); with tensor-core
 * math the heuristics' tensor-op algorithms are taken too, and a plan's
 * workspaces are those of its math (conv2d_workspace_bytes is asked with the
 * node's compute dtype set, as the calls are). conv2d_workspace_bytes plans with the
 * device it is asked for (its own cuDNN handle). A batch whose tensors
 * exceed cuDNN's 2^31-value descriptors runs in chunks of samples; the plans
 * and the workspace are those of one chunk. Workspace layout:
 * [kernel KRSC][backward: dw KRSC][padded input][backward: padded dinp][cuDNN]. */
#include <limits.h>
#include <string.h>

#include "conv_check.h"
#include "cuda_ops.h"

#define BF_CONV_REF_B 64 /* the batch size algorithms are chosen for */
#define BF_WS_ALIGN 256

/* ---- geometry (the CPU's rules, csrc/cpu/conv2d.c) ---- */

/* values per sample of the largest tensor cuDNN sees: input, padded input or output */
static long long per_sample(const bf_conv_geom *g) {
    const long long HP = (long long)(g->OH - 1) * g->SH + g->KH, WP = (long long)(g->OW - 1) * g->SW + g->KW;
    long long per = (long long)g->H * g->W * g->C, t = HP * WP * g->C;
    if (t > per) per = t;
    t = (long long)g->OH * g->OW * g->K;
    return t > per ? t : per;
}

/* the core's one check of a geometry (core/conv_check.h) */
bf_status bf_cuda_check_geom(const bf_conv_geom *g, const char *op, int pooling) {
    return bf_conv_check_geom(g, op, pooling);
}

/* ---- kernels ---- */

// wt (K, KK) = w (KK, K)^T, KK = KH*KW*C: Keras (KH,KW,C,K) -> cuDNN KRSC
__global__ void conv_kernel_to_krsc_kernel(float *wt, const float *w, long KK, int K) {
    const long n = KK * K;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long j = i / K;
        const int k = (int)(i % K);
        wt[(long)k * KK + j] = w[i];
    }
}

// dw (KK, K) += dwt (K, KK)^T: KRSC gradient back into the Keras layout
__global__ void conv_grad_from_krsc_kernel(float *dw, const float *dwt, long KK, int K) {
    const long n = KK * K;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long j = i / K;
        const int k = (int)(i % K);
        dw[i] += dwt[(long)k * KK + j];
    }
}

// xp (B,HP,WP,C) = inp (B,H,W,C) shifted by (PT,PL), zeros elsewhere
__global__ void conv_pad_kernel(float *xp, const float *inp, int B, int H, int W, int C, int HP, int WP,
                                int PT, int PL) {
    const long n = (long)B * HP * WP * C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        long r = i / C;
        const int x = (int)(r % WP) - PL;
        r /= WP;
        const int y = (int)(r % HP) - PT;
        const long b = r / HP;
        xp[i] = (y >= 0 && y < H && x >= 0 && x < W) ? inp[((b * H + y) * W + x) * C + c] : 0.0f;
    }
}

// dinp (B,H,W,C) = dxp (B,HP,WP,C) at (h+PT, w+PL); 0 for cells no window reaches
__global__ void conv_crop_kernel(float *dinp, const float *dxp, int B, int H, int W, int C, int HP, int WP,
                                 int PT, int PL) {
    const long n = (long)B * H * W * C;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        long r = i / C;
        const int x = (int)(r % W) + PL;
        r /= W;
        const int y = (int)(r % H) + PT;
        const long b = r / H;
        dinp[i] = (y < HP && x < WP) ? dxp[((b * HP + y) * WP + x) * C + c] : 0.0f;
    }
}

/* ---- plans: descriptors and algorithms per geometry ---- */

static void plan_destroy(bf_cuda_conv_plan *p) {
    if (p->x) cudnnDestroyTensorDescriptor(p->x);
    if (p->y) cudnnDestroyTensorDescriptor(p->y);
    if (p->w) cudnnDestroyFilterDescriptor(p->w);
    if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
    memset(p, 0, sizeof *p);
}

void bf_cuda_conv_forget(bf_cuda_state *st) {
    for (int i = 0; i < BF_CUDA_CONV_CACHE; i++)
        if (st->conv[i].used) plan_destroy(&st->conv[i]);
}

/* input / output descriptors for batch n */
static bf_status plan_set_batch(bf_cuda_state *st, bf_cuda_conv_plan *p, int n) {
    const bf_conv_geom *g = &p->g;
    BF_CUDNN_CHECK(st, cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, g->C,
                                                  p->padded ? p->HP : g->H, p->padded ? p->WP : g->W));
    BF_CUDNN_CHECK(st, cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, g->K, g->OH,
                                                  g->OW));
    return BF_OK;
}

static int fwd_allowed(cudnnConvolutionFwdAlgo_t a) {
    return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
static int bwd_data_allowed(cudnnConvolutionBwdDataAlgo_t a) {
    return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
static int bwd_filter_allowed(cudnnConvolutionBwdFilterAlgo_t a) {
    return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}
/* the math of the convolutions of the op now running (bf_backend.half / tf32) */
static cudnnMathType_t conv_math(const bf_cuda_state *st) {
    if (st->be.half == 2) return CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    return st->be.half == 1 || st->be.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

/* an algorithm of math type m may run under the plan's math */
static int math_ok(const bf_cuda_conv_plan *p, cudnnMathType_t m) {
    return p->math != CUDNN_FMA_MATH || m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
}

/* heuristic choice at the reference batch; the fallbacks need no heuristics */
static bf_status plan_choose(bf_cuda_state *st, bf_cuda_conv_plan *p) {
    /* the reference batch, less where 64 samples exceed a descriptor (large images) */
    const long long cap = INT_MAX / per_sample(&p->g);
    BF_TRY(plan_set_batch(st, p, cap < BF_CONV_REF_B ? (int)(cap < 1 ? 1 : cap) : BF_CONV_REF_B));
    p->fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    p->bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    p->bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    if (cudnnGetConvolutionForwardAlgorithm_v7(st->dnn, p->x, p->w, p->conv, p->y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fp) ==
        CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < got; i++)
            if (fp[i].status == CUDNN_STATUS_SUCCESS && fwd_allowed(fp[i].algo) && math_ok(p, fp[i].mathType)) {
                p->fwd = fp[i].algo;
                break;
            }
    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    got = 0;
    if (cudnnGetConvolutionBackwardDataAlgorithm_v7(st->dnn, p->w, p->y, p->conv, p->x,
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, dp) ==
        CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < got; i++)
            if (dp[i].status == CUDNN_STATUS_SUCCESS && bwd_data_allowed(dp[i].algo) &&
                dp[i].determinism == CUDNN_DETERMINISTIC && math_ok(p, dp[i].mathType)) {
                p->bwd_data = dp[i].algo;
                break;
            }
    cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    got = 0;
    if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(st->dnn, p->x, p->y, p->conv, p->w,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, wp) ==
        CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < got; i++)
            if (wp[i].status == CUDNN_STATUS_SUCCESS && bwd_filter_allowed(wp[i].algo) &&
                wp[i].determinism == CUDNN_DETERMINISTIC && math_ok(p, wp[i].mathType)) {
                p->bwd_filter = wp[i].algo;
                break;
            }
    cudaGetLastError();
    return BF_OK;
}

/* workspace sizes at the plan's batch; an algorithm unsupported there falls
 * back to the plain one */
static bf_status plan_sizes(bf_cuda_state *st, bf_cuda_conv_plan *p) {
    BF_TRY(plan_set_batch(st, p, p->g.B));
    if (cudnnGetConvolutionForwardWorkspaceSize(st->dnn, p->x, p->w, p->conv, p->y, p->fwd, &p->fwd_ws) !=
        CUDNN_STATUS_SUCCESS) {
        p->fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
        BF_CUDNN_CHECK(st, cudnnGetConvolutionForwardWorkspaceSize(st->dnn, p->x, p->w, p->conv, p->y, p->fwd,
                                                                   &p->fwd_ws));
    }
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(st->dnn, p->w, p->y, p->conv, p->x, p->bwd_data,
                                                     &p->bwd_data_ws) != CUDNN_STATUS_SUCCESS) {
        p->bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
        BF_CUDNN_CHECK(st, cudnnGetConvolutionBackwardDataWorkspaceSize(st->dnn, p->w, p->y, p->conv, p->x,
                                                                        p->bwd_data, &p->bwd_data_ws));
    }
    if (cudnnGetConvolutionBackwardFilterWorkspaceSize(st->dnn, p->x, p->y, p->conv, p->w, p->bwd_filter,
                                                       &p->bwd_filter_ws) != CUDNN_STATUS_SUCCESS) {
        p->bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
        BF_CUDNN_CHECK(st, cudnnGetConvolutionBackwardFilterWorkspaceSize(st->dnn, p->x, p->y, p->conv, p->w,
                                                                          p->bwd_filter, &p->bwd_filter_ws));
    }
    return BF_OK;
}

/* descriptors of a new plan for geometry g (already checked) */
static bf_status plan_make(bf_cuda_state *st, bf_cuda_conv_plan *p, const bf_conv_geom *g, cudnnMathType_t math) {
    memset(p, 0, sizeof *p);
    p->g = *g;
    p->math = math;
    /* can cuDNN's symmetric padding give Keras's output size? */
    const int sym = (g->H + 2 * g->PT - g->KH) / g->SH + 1 == g->OH &&
                    (g->W + 2 * g->PL - g->KW) / g->SW + 1 == g->OW;
    p->padded = !sym;
    p->HP = (g->OH - 1) * g->SH + g->KH;
    p->WP = (g->OW - 1) * g->SW + g->KW;
    const long long xin = p->padded ? (long long)g->B * p->HP * p->WP * g->C : (long long)g->B * g->H * g->W * g->C;
    if (xin > INT_MAX || (long long)g->B * g->OH * g->OW * g->K > INT_MAX)
        return BF_FAIL(BF_ERR_INTERNAL,
                       "conv2d: a chunk of %d samples (input %dx%dx%d, output %dx%dx%d) exceeds cuDNN's "
                       "2^31 values per tensor", g->B, g->H, g->W, g->C, g->OH, g->OW, g->K);
    BF_CUDNN_CHECK(st, cudnnCreateTensorDescriptor(&p->x));
    BF_CUDNN_CHECK(st, cudnnCreateTensorDescriptor(&p->y));
    BF_CUDNN_CHECK(st, cudnnCreateFilterDescriptor(&p->w));
    BF_CUDNN_CHECK(st, cudnnCreateConvolutionDescriptor(&p->conv));
    BF_CUDNN_CHECK(st, cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, g->K, g->C, g->KH,
                                                  g->KW));
    BF_CUDNN_CHECK(st, cudnnSetConvolution2dDescriptor(p->conv, p->padded ? 0 : g->PT, p->padded ? 0 : g->PL,
                                                       g->SH, g->SW, 1, 1, CUDNN_CROSS_CORRELATION,
                                                       CUDNN_DATA_FLOAT));
    BF_CUDNN_CHECK(st, cudnnSetConvolutionMathType(p->conv, math));
    BF_TRY(plan_set_batch(st, p, g->B));
    int n = 0, c = 0, h = 0, w = 0;
    BF_CUDNN_CHECK(st, cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &n, &c, &h, &w));
    if (n != g->B || c != g->K || h != g->OH || w != g->OW)
        return BF_FAIL(BF_ERR_INTERNAL, "conv2d: cuDNN computes output (%d,%d,%d,%d), Keras (%d,%d,%d,%d)", n, h,
                       w, c, g->B, g->OH, g->OW, g->K);
    BF_TRY(plan_choose(st, p));
    BF_TRY(plan_sizes(st, p));
    p->used = 1;
    return BF_OK;
}

/* the cached plan of g, made on first use (evicting the least recently used) */
static bf_status plan_get(bf_cuda_state *st, const bf_conv_geom *g, bf_cuda_conv_plan **out) {
    const cudnnMathType_t math = conv_math(st);
    int slot = 0;
    for (int i = 0; i < BF_CUDA_CONV_CACHE; i++) {
        bf_cuda_conv_plan *p = &st->conv[i];
        if (p->used && p->math == math && !memcmp(&p->g, g, sizeof *g)) {
            p->stamp = ++st->conv_clock;
            *out = p;
            return BF_OK;
        }
        if (!p->used) {
            if (st->conv[slot].used) slot = i;
        } else if (st->conv[slot].used && p->stamp < st->conv[slot].stamp) {
            slot = i;
        }
    }
    bf_cuda_conv_plan *p = &st->conv[slot];
    if (p->used) plan_destroy(p);
    bf_status s = plan_make(st, p, g, math);
    if (s != BF_OK) {
        plan_destroy(p);
        return s;
    }
    p->stamp = ++st->conv_clock;
    *out = p;
    return BF_OK;
}

/* byte offsets of the workspace parts */
typedef struct {
    size_t wt, dwt, xp, dxp, algo, algo_bytes, total;
} ws_layout;

static size_t align_up(size_t x) { return (x + BF_WS_ALIGN - 1) / BF_WS_ALIGN * BF_WS_ALIGN; }

static void layout(const bf_cuda_conv_plan *p, int backward, ws_layout *L) {
    const bf_conv_geom *g = &p->g;
    const size_t wb = align_up((size_t)g->KH * g->KW * g->C * g->K * sizeof(float));
    const size_t xb = p->padded ? align_up((size_t)g->B * p->HP * p->WP * g->C * sizeof(float)) : 0;
    size_t off = 0;
    L->wt = off;
    off += wb;
    L->dwt = off;
    if (backward) off += wb;
    L->xp = off;
    off += xb;
    L->dxp = off;
    if (backward) off += xb;
    L->algo = off;
    L->algo_bytes = backward ? (p->bwd_data_ws > p->bwd_filter_ws ? p->bwd_data_ws : p->bwd_filter_ws) : p->fwd_ws;
    L->total = off + align_up(L->algo_bytes);
}

/* Samples per cuDNN call: its 4-d descriptors hold at most 2^31 - 1 values
 * per tensor, so a larger batch runs in chunks of this many samples (slices
 * of an NHWC batch are contiguous). Plans and workspace are those of a chunk. */
static int chunk_batch(const bf_conv_geom *g) {
    const long long n = INT_MAX / per_sample(g);
    return n >= g->B ? g->B : (int)(n < 1 ? 1 : n);
}

size_t bf_cuda_conv2d_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward) {
    bf_cuda_state *st = be ? BF_CUDA_ST(be) : NULL;
    /* what is needed without cuDNN: the transposed kernel(s); a failure here
     * recurs, with its message, in the conv2d call itself */
    const size_t fallback = g ? align_up((size_t)g->KH * g->KW * g->C * g->K * sizeof(float)) * (backward ? 2 : 1) : 0;
    if (!g || !st || !st->open || st->poisoned) return fallback;
    bf_conv_geom gc = *g;
    if (bf_cuda_check_geom(&gc, "conv2d", 0) != BF_OK) return fallback;
    gc.B = chunk_batch(g);
    if (cudaSetDevice(st->device) != cudaSuccess) {
        cudaGetLastError();
        return fallback;
    }
    bf_cuda_conv_plan *p = NULL;
    if (plan_get(st, &gc, &p) != BF_OK) return fallback;
    ws_layout L;
    layout(p, backward, &L);
    return L.total;
}

/* checks shared by forward and backward; *Bc = samples per cuDNN call */
static bf_status conv_enter(const bf_conv_geom *g, const char *op, void *ws, int *Bc) {
    BF_TRY(bf_cuda_check_geom(g, op, 0));
    if (!ws) return BF_FAIL(BF_ERR_ARG, "%s: no workspace (conv2d_workspace_bytes is never 0)", op);
    *Bc = chunk_batch(g);
    return BF_OK;
}

/* the plan of the chunk of nb samples and its workspace layout */
static bf_status chunk_plan(bf_cuda_state *st, const bf_conv_geom *g, int nb, int backward,
                            bf_cuda_conv_plan **p, ws_layout *L) {
    bf_conv_geom gc = *g;
    gc.B = nb;
    BF_TRY(plan_get(st, &gc, p));
    layout(*p, backward, L);
    return BF_OK;
}

// out (B,OH,OW,K) = conv(inp (B,H,W,C), w (KH,KW,C,K)) + b (K); b may be NULL
bf_status bf_cuda_conv2d_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                 const float *w, const float *b, const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    if (!out || !inp || !w) return BF_FAIL(BF_ERR_ARG, "conv2d_forward: NULL tensor");
    int Bc = 1;
    BF_TRY(conv_enter(g, "conv2d_forward", ws, &Bc));
    char *base = (char *)ws;
    const long KK = (long)g->KH * g->KW * g->C;
    const long xs = (long)g->H * g->W * g->C, ys = (long)g->OH * g->OW * g->K; /* per sample */
    const float one = 1.0f, zero = 0.0f;
    float *wt = NULL;
    for (int b0 = 0; b0 < g->B; b0 += Bc) {
        const int nb = g->B - b0 < Bc ? g->B - b0 : Bc;
        bf_cuda_conv_plan *p;
        ws_layout L;
        BF_TRY(chunk_plan(st, g, nb, 0, &p, &L));
        if (!wt) {
            wt = (float *)(base + L.wt);
            conv_kernel_to_krsc_kernel<<<bf_cuda_grid(KK * g->K, 256), 256, 0, st->stream>>>(wt, w, KK, g->K);
            BF_CUDA_LAUNCHED(st, conv_kernel_to_krsc_kernel);
        }
        const float *x = inp + b0 * xs;
        if (p->padded) {
            float *xp = (float *)(base + L.xp);
            conv_pad_kernel<<<bf_cuda_grid((long)nb * p->HP * p->WP * g->C, 256), 256, 0, st->stream>>>(
                xp, x, nb, g->H, g->W, g->C, p->HP, p->WP, g->PT, g->PL);
            BF_CUDA_LAUNCHED(st, conv_pad_kernel);
            x = xp;
        }
        BF_CUDNN_CHECK(st, cudnnConvolutionForward(st->dnn, &one, p->x, x, p->w, wt, p->conv, p->fwd,
                                                   base + L.algo, p->fwd_ws, &zero, p->y, out + b0 * ys));
    }
    if (b) BF_TRY(bf_cuda_bias_add(st, out, b, (long)g->B * g->OH * g->OW, g->K));
    return BF_OK;
}

// dinp (B,H,W,C) = conv^T(dout); dw (KH,KW,C,K) += ...; db (K) += sum dout; each may be NULL
bf_status bf_cuda_conv2d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                  const float *dout, const float *inp, const float *w,
                                  const bf_conv_geom *g) {
    BF_CUDA_ENTER(st, be);
    if (!dout || !inp || !w) return BF_FAIL(BF_ERR_ARG, "conv2d_backward: NULL tensor");
    int Bc = 1;
    BF_TRY(conv_enter(g, "conv2d_backward", ws, &Bc));
    char *base = (char *)ws;
    const long KK = (long)g->KH * g->KW * g->C;
    const long xs = (long)g->H * g->W * g->C, ys = (long)g->OH * g->OW * g->K; /* per sample */
    const float one = 1.0f, zero = 0.0f;
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, dout, (long)g->B * g->OH * g->OW, g->K));
    float *wt = NULL, *dwt = NULL;
    for (int b0 = 0; b0 < g->B; b0 += Bc) {
        const int nb = g->B - b0 < Bc ? g->B - b0 : Bc;
        bf_cuda_conv_plan *p;
        ws_layout L;
        BF_TRY(chunk_plan(st, g, nb, 1, &p, &L));
        const float *dy = dout + b0 * ys;
        if (dw) {
            const float *x = inp + b0 * xs;
            if (p->padded) {
                float *xp = (float *)(base + L.xp);
                conv_pad_kernel<<<bf_cuda_grid((long)nb * p->HP * p->WP * g->C, 256), 256, 0, st->stream>>>(
                    xp, x, nb, g->H, g->W, g->C, p->HP, p->WP, g->PT, g->PL);
                BF_CUDA_LAUNCHED(st, conv_pad_kernel);
                x = xp;
            }
            /* KRSC gradient of the whole batch: the first chunk writes, the rest add */
            const float *beta = dwt ? &one : &zero;
            dwt = (float *)(base + L.dwt);
            BF_CUDNN_CHECK(st, cudnnConvolutionBackwardFilter(st->dnn, &one, p->x, x, p->y, dy, p->conv,
                                                              p->bwd_filter, base + L.algo, p->bwd_filter_ws, beta,
                                                              p->w, dwt));
        }
        if (dinp) {
            if (!wt) {
                wt = (float *)(base + L.wt);
                conv_kernel_to_krsc_kernel<<<bf_cuda_grid(KK * g->K, 256), 256, 0, st->stream>>>(wt, w, KK, g->K);
                BF_CUDA_LAUNCHED(st, conv_kernel_to_krsc_kernel);
            }
            float *dx = p->padded ? (float *)(base + L.dxp) : dinp + b0 * xs;
            BF_CUDNN_CHECK(st, cudnnConvolutionBackwardData(st->dnn, &one, p->w, wt, p->y, dy, p->conv, p->bwd_data,
                                                            base + L.algo, p->bwd_data_ws, &zero, p->x, dx));
            if (p->padded) {
                conv_crop_kernel<<<bf_cuda_grid((long)nb * xs, 256), 256, 0, st->stream>>>(
                    dinp + b0 * xs, dx, nb, g->H, g->W, g->C, p->HP, p->WP, g->PT, g->PL);
                BF_CUDA_LAUNCHED(st, conv_crop_kernel);
            }
        }
    }
    if (dw) {
        conv_grad_from_krsc_kernel<<<bf_cuda_grid(KK * g->K, 256), 256, 0, st->stream>>>(dw, dwt, KK, g->K);
        BF_CUDA_LAUNCHED(st, conv_grad_from_krsc_kernel);
    }
    return BF_OK;
}
