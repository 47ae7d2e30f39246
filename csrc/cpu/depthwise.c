/* depthwise.c - DepthwiseConv2D on the CPU, NHWC, Keras semantics.
 * Input (B,H,W,C), depthwise kernel (KH,KW,C,M) (M = depth_multiplier), output
 * (B,OH,OW,C*M) with output channel c*M + m = sum over the window of
 * inp[.., c] * w[kh,kw,c,m] (+ b[c*M + m]). Geometry is bf_conv_geom with
 * K = C*M; padded cells are zeros ('same'), as in Keras.
 * Work is split by output rows (forward, backward-data) and by input channels
 * (backward-filter), each cell summed in one fixed order: the same bits on any
 * number of threads. Backward OVERWRITES dinp, ADDS into dw and db; any of
 * them may be NULL (a first or frozen layer). No scratch, no allocation. */
#include <string.h>

#include "conv_check.h"
#include "cpu_ops.h"
#include "par.h"

/* valid part [*a, *z) of the window starting at s (length k) in [0, n) */
static inline void clip(int s, int k, int n, int *a, int *z) {
    *a = s < 0 ? 0 : s;
    *z = s + k > n ? n : s + k;
}

static bf_status check(const bf_conv_geom *g, const char *op, const void *a, const void *b) {
    BF_TRY(bf_conv_check_geom(g, op, 0));
    if (g->K % g->C != 0)
        return BF_FAIL(BF_ERR_SHAPE, "%s: output channels %d are not a multiple of input channels %d",
                       op, g->K, g->C);
    if (!a || !b) return BF_FAIL(BF_ERR_ARG, "%s: NULL tensor", op);
    return BF_OK;
}

typedef struct {
    const bf_conv_geom *g;
    float *out, *dinp, *dw, *db;
    const float *inp, *w, *b, *dout;
} job;

/* forward task t: output row t = (b, oh) */
static void forward_row(void *ctx, long t, int slot) {
    (void)slot;
    const job *j = ctx;
    const bf_conv_geom *g = j->g;
    const int C = g->C, K = g->K, M = K / C, W = g->W;
    const long b = t / g->OH;
    const int oh = (int)(t % g->OH);
    int h0, h1;
    clip(oh * g->SH - g->PT, g->KH, g->H, &h0, &h1);
    const float *im = j->inp + (size_t)b * g->H * W * C;
    for (int ow = 0; ow < g->OW; ow++) {
        float *restrict o = j->out + (((size_t)b * g->OH + oh) * g->OW + ow) * K;
        if (j->b) memcpy(o, j->b, (size_t)K * sizeof(float));
        else memset(o, 0, (size_t)K * sizeof(float));
        int w0, w1;
        clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
        for (int ih = h0; ih < h1; ih++) {
            const int kh = ih - (oh * g->SH - g->PT);
            for (int iw = w0; iw < w1; iw++) {
                const int kw = iw - (ow * g->SW - g->PL);
                const float *restrict x = im + ((size_t)ih * W + iw) * C;
                const float *restrict k = j->w + ((size_t)kh * g->KW + kw) * K;
                if (M == 1)
                    for (int c = 0; c < C; c++) o[c] += x[c] * k[c];
                else
                    for (int c = 0; c < C; c++)
                        for (int m = 0; m < M; m++) o[c * M + m] += x[c] * k[c * M + m];
            }
        }
    }
}

// out (B,OH,OW,C*M) = depthwise conv(inp (B,H,W,C), w (KH,KW,C,M)) + b (C*M); b may be NULL
bf_status bf_cpu_depthwise_forward(bf_backend *be, float *out, const float *inp, const float *w,
                                   const float *b, const bf_conv_geom *g) {
    (void)be;
    BF_TRY(check(g, "depthwise_conv2d", out, inp));
    if (!w) return BF_FAIL(BF_ERR_ARG, "depthwise_conv2d: NULL kernel");
    job j = {.g = g, .out = out, .inp = inp, .w = w, .b = b};
    bf_par_for((long)g->B * g->OH, bf_par_threads(), forward_row, &j);
    return BF_OK;
}

/* backward-data task t: input row t = (b, ih), gathered from the output cells
 * whose windows cover it (no two tasks write the same cell) */
static void backward_data_row(void *ctx, long t, int slot) {
    (void)slot;
    const job *j = ctx;
    const bf_conv_geom *g = j->g;
    const int C = g->C, K = g->K, M = K / C, W = g->W;
    const long b = t / g->H;
    const int ih = (int)(t % g->H);
    float *restrict row = j->dinp + ((size_t)b * g->H + ih) * W * C;
    memset(row, 0, (size_t)W * C * sizeof(float));
    /* rows oh with 0 <= ih - (oh*SH - PT) < KH */
    const int lo = ih + g->PT - g->KH + 1, hi = ih + g->PT;
    const int oh0 = lo <= 0 ? 0 : (lo + g->SH - 1) / g->SH;
    const int oh1 = hi / g->SH + 1 < g->OH ? hi / g->SH + 1 : g->OH;
    for (int oh = oh0; oh < oh1; oh++) {
        const int kh = ih - (oh * g->SH - g->PT);
        for (int ow = 0; ow < g->OW; ow++) {
            int w0, w1;
            clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
            const float *restrict d = j->dout + (((size_t)b * g->OH + oh) * g->OW + ow) * K;
            for (int iw = w0; iw < w1; iw++) {
                const int kw = iw - (ow * g->SW - g->PL);
                const float *restrict k = j->w + ((size_t)kh * g->KW + kw) * K;
                float *restrict x = row + (size_t)iw * C;
                if (M == 1)
                    for (int c = 0; c < C; c++) x[c] += d[c] * k[c];
                else
                    for (int c = 0; c < C; c++)
                        for (int m = 0; m < M; m++) x[c] += d[c * M + m] * k[c * M + m];
            }
        }
    }
}

/* channels per backward-filter task */
#define BF_DW_CBLK 16

/* backward-filter task t: input channels [t*CBLK, ...) of dw and db, summed
 * over (b, oh, ow, cell) in that order */
static void backward_filter_block(void *ctx, long t, int slot) {
    (void)slot;
    const job *j = ctx;
    const bf_conv_geom *g = j->g;
    const int C = g->C, K = g->K, M = K / C, W = g->W;
    const int c0 = (int)t * BF_DW_CBLK, c1 = c0 + BF_DW_CBLK < C ? c0 + BF_DW_CBLK : C;
    for (long b = 0; b < g->B; b++) {
        const float *im = j->inp + (size_t)b * g->H * W * C;
        for (int oh = 0; oh < g->OH; oh++) {
            int h0, h1;
            clip(oh * g->SH - g->PT, g->KH, g->H, &h0, &h1);
            for (int ow = 0; ow < g->OW; ow++) {
                int w0, w1;
                clip(ow * g->SW - g->PL, g->KW, W, &w0, &w1);
                const float *restrict d = j->dout + (((size_t)b * g->OH + oh) * g->OW + ow) * K;
                if (j->db)
                    for (int q = c0 * M; q < c1 * M; q++) j->db[q] += d[q];
                for (int ih = h0; ih < h1 && j->dw; ih++) {
                    const int kh = ih - (oh * g->SH - g->PT);
                    for (int iw = w0; iw < w1; iw++) {
                        const int kw = iw - (ow * g->SW - g->PL);
                        const float *restrict x = im + ((size_t)ih * W + iw) * C;
                        float *restrict k = j->dw + ((size_t)kh * g->KW + kw) * K;
                        for (int c = c0; c < c1; c++)
                            for (int m = 0; m < M; m++) k[c * M + m] += x[c] * d[c * M + m];
                    }
                }
            }
        }
    }
}

// dinp (B,H,W,C) = conv^T(dout (B,OH,OW,C*M)); dw (KH,KW,C,M) += ...; db (C*M) += sum dout; dinp/db may be NULL
bf_status bf_cpu_depthwise_backward(bf_backend *be, float *dinp, float *dw, float *db,
                                    const float *dout, const float *inp, const float *w,
                                    const bf_conv_geom *g) {
    (void)be;
    BF_TRY(check(g, "depthwise_conv2d backward", dout, inp));
    if (!w) return BF_FAIL(BF_ERR_ARG, "depthwise_conv2d backward: NULL kernel");
    job j = {.g = g, .dinp = dinp, .dw = dw, .db = db, .inp = inp, .w = w, .dout = dout};
    const int threads = bf_par_threads();
    if (dinp) bf_par_for((long)g->B * g->H, threads, backward_data_row, &j);
    if (dw || db) bf_par_for((g->C + BF_DW_CBLK - 1) / BF_DW_CBLK, threads, backward_filter_block, &j);
    return BF_OK;
}
