/* conv2d_direct.c - the direct (implicit-GEMM) Conv2D path (conv2d_direct.h):
 * which convolutions take it, its workspace, and the threading around the
 * per-ISA kernels (conv2d_direct_avx512.c / _avx2.c).
 *   forward   y rows (b, oh) split over the pool; each element summed in a
 *             fixed order, so any split gives the same bits;
 *   dinp      for stride 1 the gradient of the input is itself a stride-1
 *             convolution of dout with the kernel flipped in (kh, kw) and
 *             transposed in (c, k), padded KH-1-PT / KW-1-PL: the forward
 *             kernel runs it with wt (KH,KW,K,C) built in the workspace;
 *   dw, db    BF_CDIR_PARTS fixed row ranges (a function of the geometry only)
 *             each summed into its own partial in the workspace by one task,
 *             then added in order: the same bits on 1 or n threads.
 * Workspace (floats): forward 0; backward P*(KK*K + K) + KK*K with
 * P = min(BF_CDIR_PARTS, B*OH), KK = KH*KW*C; independent of B beyond P. */
#include <string.h>

#include "conv2d_direct.h"
#include "cpu_isa.h"
#include "par.h"

int bf_cpu_conv2d_direct = 1;

/* rows of (x + dy) per dw pass kept near this many floats (L2-resident) */
#define BF_CDIR_DW_FLOATS 32768L
/* forward: at most this many row ranges per thread (load balance) */
#define BF_CDIR_FWD_SPLIT 8

int bf_cpu_conv2d_direct_ok(const bf_conv_geom *g) {
    if (!bf_cpu_conv2d_direct || bf_cpu_isa() < BF_ISA_AVX2) return 0;
    if (g->SH != 1 || g->SW != 1 || (g->KH == 1 && g->KW == 1)) return 0;
    if (g->C > BF_CDIR_MAX_CH || g->K > BF_CDIR_MAX_CH) return 0;
    /* a window over the whole unpadded image: im2col is the input, one GEMM */
    if (!g->PT && !g->PL && g->KH == g->H && g->KW == g->W) return 0;
    return 1;
}

static long dw_parts(const bf_conv_geom *g) {
    const long rows = (long)g->B * g->OH;
    return rows < BF_CDIR_PARTS ? rows : BF_CDIR_PARTS;
}

size_t bf_cpu_conv2d_direct_ws_floats(const bf_conv_geom *g, int backward) {
    if (!backward) return 0;
    const size_t n = (size_t)g->KH * g->KW * g->C * g->K;
    return (size_t)dw_parts(g) * (n + (size_t)g->K) + n;
}

static void fwd_rows(const bf_cdir *j, long r0, long r1) {
    if (bf_cpu_isa() >= BF_ISA_AVX512) bf_cdir_fwd_rows_avx512(j, r0, r1);
    else bf_cdir_fwd_rows_avx2(j, r0, r1);
}

static void dw_rows(float *dw, const bf_cdir *j, long r0, long r1) {
    if (bf_cpu_isa() >= BF_ISA_AVX512) bf_cdir_dw_rows_avx512(dw, j, r0, r1);
    else bf_cdir_dw_rows_avx2(dw, j, r0, r1);
}

typedef struct {
    const bf_cdir *j;
    long rows, parts;
} rows_job;

static void fwd_part(void *ctx, long t, int slot) {
    (void)slot;
    const rows_job *r = ctx;
    long lo, hi;
    bf_par_range(r->rows, r->parts, t, &lo, &hi);
    if (hi > lo) fwd_rows(r->j, lo, hi);
}

// j->y (B,OH,OW,K) = conv(j->x, j->w) + j->b, rows split over the pool
static void run_forward(const bf_cdir *j) {
    const int threads = bf_par_in_task() ? 1 : bf_par_threads();
    rows_job r = {j, (long)j->B * j->OH, 1};
    if (threads > 1) r.parts = bf_par_parts(r.rows, 1, (long)threads * BF_CDIR_FWD_SPLIT);
    if (r.parts < 2) fwd_rows(j, 0, r.rows);
    else bf_par_for(r.parts, threads, fwd_part, &r);
}

void bf_cpu_conv2d_direct_forward(float *out, const float *inp, const float *w, const float *b,
                                  const bf_conv_geom *g) {
    const bf_cdir j = {inp, w, b, out, g->B, g->H, g->W, g->C, g->OH, g->OW, g->K, g->KH, g->KW, g->PT, g->PL};
    run_forward(&j);
}

typedef struct {
    const bf_cdir *j;
    float *ws; /* P partials of (KK*K dw, K db) */
    long rows, parts, sub;
    size_t n; /* KK*K */
    int want_dw, want_db;
} dw_job;

// partial t: (dw_t (KK,K), db_t (K)) = sums over its rows of x-window * dy and dy
static void dw_part(void *ctx, long t, int slot) {
    (void)slot;
    const dw_job *d = ctx;
    const bf_cdir *j = d->j;
    long lo, hi;
    bf_par_range(d->rows, d->parts, t, &lo, &hi);
    float *dwp = d->ws + (size_t)t * (d->n + (size_t)j->K), *dbp = dwp + d->n;
    if (d->want_dw) {
        memset(dwp, 0, d->n * sizeof(float));
        for (long r = lo; r < hi; r += d->sub) dw_rows(dwp, j, r, r + d->sub < hi ? r + d->sub : hi);
    }
    if (d->want_db) { /* a partial covers up to B*OH*OW/16 pixels: summed in double, as colsum does */
        const int K = j->K;
        double acc[BF_CDIR_MAX_CH] = {0};
        const float *g = j->y + (size_t)lo * j->OW * K;
        for (long p = 0; p < (hi - lo) * j->OW; p++, g += K)
            for (int k = 0; k < K; k++) acc[k] += g[k];
        for (int k = 0; k < K; k++) dbp[k] = (float)acc[k];
    }
}

void bf_cpu_conv2d_direct_backward(float *dinp, float *dw, float *db, float *ws, const float *dout,
                                   const float *inp, const float *w, const bf_conv_geom *g) {
    const int K = g->K, C = g->C, KH = g->KH, KW = g->KW;
    const size_t n = (size_t)KH * KW * C * K;
    const long P = dw_parts(g);
    const int threads = bf_par_in_task() ? 1 : bf_par_threads();
    if (dw || db) {
        const bf_cdir j = {inp, NULL, NULL, (float *)dout, g->B, g->H, g->W, C, g->OH, g->OW, K, KH, KW, g->PT, g->PL};
        long sub = BF_CDIR_DW_FLOATS / ((long)g->OW * K + (long)g->W * C);
        dw_job d = {&j, ws, (long)g->B * g->OH, P, sub < 1 ? 1 : sub, n, dw != NULL, db != NULL};
        bf_par_for(P, threads, dw_part, &d);
        const size_t stride = n + (size_t)K;
        if (dw)
            for (size_t i = 0; i < n; i++) {
                float s = ws[i];
                for (long p = 1; p < P; p++) s += ws[(size_t)p * stride + i];
                dw[i] += s;
            }
        if (db)
            for (int k = 0; k < K; k++) {
                float s = ws[n + (size_t)k];
                for (long p = 1; p < P; p++) s += ws[(size_t)p * stride + n + (size_t)k];
                db[k] += s;
            }
    }
    if (dinp) { /* wt (KH,KW,K,C): w flipped in (kh, kw), (c, k) transposed */
        float *wt = ws + (size_t)P * (n + (size_t)K);
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                const float *src = w + (size_t)((KH - 1 - kh) * KW + (KW - 1 - kw)) * C * K;
                float *dst = wt + (size_t)(kh * KW + kw) * K * C;
                for (int c = 0; c < C; c++)
                    for (int k = 0; k < K; k++) dst[(size_t)k * C + c] = src[(size_t)c * K + k];
            }
        const bf_cdir jt = {dout, wt, NULL, dinp, g->B, g->OH, g->OW, K, g->H, g->W, C, KH, KW,
                            KH - 1 - g->PT, KW - 1 - g->PL};
        run_forward(&jt);
    }
}
