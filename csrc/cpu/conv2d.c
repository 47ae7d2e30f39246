/* conv2d.c - Conv2D on the CPU: im2col + OpenBLAS sgemm, tiled over output rows.
 * Stride-1 convolutions with at most 64 input and output channels go to the
 * direct AVX-512 / AVX2 kernels instead where the CPU has them
 * (conv2d_direct.c, bf_cpu_conv2d_direct_ok): workspace, forward and
 * backward all ask it first, so the plan always matches the path that runs.
 * Layouts: inp (B,H,W,C), w (KH,KW,C,K) as Keras, out (B,OH,OW,K), all NHWC.
 * The im2col matrix has one row per output position r = (b*OH + oh)*OW + ow and
 * KK = KH*KW*C columns ordered (kh, kw, c), which is exactly the row order of w
 * seen as a (KK,K) matrix, so out = col @ w. It is built TILE rows at a time
 * (bf_cpu_conv2d_tile_rows); tiles may cut across output rows and samples.
 * Invariants:
 *  - the workspace is bounded by bf_cpu_conv2d_ws_cap plus O(KK*K) (never less
 *    than one output row of im2col), so it does not grow with the batch size;
 *  - convolutions whose im2col matrix IS the input (1x1 stride 1 unpadded, or a
 *    window covering the whole unpadded image) skip im2col;
 *  - for small KK the bias rides in the GEMM (a column of ones in col, a row b
 *    under w), which also yields db in backward;
 *  - skinny GEMMs (K*KK small, e.g. 3x3x3 -> 32) are cut into row blocks that
 *    OpenBLAS's batched GEMM runs, split over the engine's pool (where its small-matrix kernels
 *    are fast); dw then goes through per-block partial sums in the workspace.
 *    If the batched entry point is missing or fails, plain sgemm is used;
 *  - backward ADDS into dw/db and OVERWRITES dinp (zeroed, then col2im adds);
 *    dinp, db and dw (a frozen kernel) may be NULL;
 *  - no allocation, no abort: errors are returned as bf_status. */
#include <limits.h>
#include <stdatomic.h>
#include <math.h>
#include <string.h>

#include "blas.h"
#include "par.h"
#include "conv_check.h"
#include "cpu_conv.h"
#include "conv2d_direct.h"

size_t bf_cpu_conv2d_ws_cap = (size_t)4 << 20;
int bf_cpu_conv2d_batch = 1;

/* ---- batched GEMM (OpenBLAS >= 0.3.30), looked up as a weak symbol so an older
 * library still loads; used only on cores with optimized small-GEMM kernels ---- */
#ifndef BF_BLAS_PREFIX_NONE
#define bf_sgemm_batch_strided_sym scipy_cblas_sgemm_batch_strided
#define bf_blas_corename scipy_openblas_get_corename
#else
#define bf_sgemm_batch_strided_sym cblas_sgemm_batch_strided
#define bf_blas_corename openblas_get_corename
#endif
#if defined(__GNUC__) && !defined(BF_NO_GEMM_BATCH)
extern void bf_sgemm_batch_strided_sym(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
                                       enum CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k,
                                       float alpha, const float *a, blasint lda, blasint stridea,
                                       const float *b, blasint ldb, blasint strideb, float beta,
                                       float *c, blasint ldc, blasint stridec, blasint count)
    __attribute__((weak));
#define BF_GEMM_BATCH_PRESENT (bf_sgemm_batch_strided_sym != NULL)
#else /* no weak symbols: never reference it */
#define BF_GEMM_BATCH_PRESENT 0
#undef bf_sgemm_batch_strided_sym
#define bf_sgemm_batch_strided_sym(...) ((void)0)
#endif

/* A batched item stays at or under OpenBLAS's small-matrix bound M*N*K <= 100^3. */
#define BF_BATCH_MNK 1000000L
/* Batching pays off when one GEMM row is this cheap (N*Kd flops / 2) or cheaper. */
#define BF_BATCH_MAX_ROWWORK 4096L
/* dw partial sums: at most this many blocks per batched call */
#define BF_BATCH_MAXP 32
/* dw (kk,K) += col^T @ d in chunks of this many rows when not batched: OpenBLAS
 * runs a GEMM with a small output and a long reduction best in short pieces */
#define BF_CONV_DW_ROWS 1024

static int batch_eligible(long n, long kd) { return n * kd <= BF_BATCH_MAX_ROWWORK; }

/* Row blocking of an M-row GEMM with N*Kd work per row for the batched call:
 * blocks of *rows rows (at most the small-matrix bound), their number a
 * multiple of BF_BATCH_ALIGN, run *group = BF_BATCH_MAXP blocks per call.
 * Neither depends on the thread count, so the blocks and dw's partial sums
 * are the same bits on any number of threads. Returns 0 when not batching. */
#define BF_BATCH_ALIGN 2
static int batch_plan(long M, long n, long kd, int *rows, int *group) {
    if (!bf_cpu_conv2d_batch || !batch_eligible(n, kd) || !BF_GEMM_BATCH_PRESENT) return 0;
    const char *core = bf_blas_corename();
    if (!core || (strcmp(core, "SkylakeX") && strcmp(core, "Cooperlake") &&
                  strcmp(core, "SapphireRapids")))
        return 0;
    const long rmax = BF_BATCH_MNK / (n * kd);
    if (M < 2 * rmax) return 0; /* one plain GEMM is as good */
    long P = (M + rmax - 1) / rmax;
    P = (P + BF_BATCH_ALIGN - 1) / BF_BATCH_ALIGN * BF_BATCH_ALIGN;
    *rows = (int)(M / P);
    *group = BF_BATCH_MAXP;
    return 1;
}

/* One batched call of `count` GEMMs C_i (M,N) = op(A_i) @ B_i (A_i = A + i*sa,
 * transposed when ta, and likewise B, C), split over the pool in runs of
 * items. Returns 0 when a part failed: OpenBLAS returns silently if its
 * argument array can't be allocated, so each part's C[0] is set to NaN first. */
typedef struct {
    int ta, M, N, K, lda;
    long sa;
    int ldb;
    long sb;
    int ldc;
    long sc;
    const float *A, *B;
    float *C;
    long parts;
    int count;
    _Atomic int failed;
} batch_job;

static void batch_part(void *ctx, long t, int slot) {
    (void)slot;
    batch_job *j = ctx;
    const long lo = j->count * t / j->parts, hi = j->count * (t + 1) / j->parts;
    if (hi <= lo) return;
    float *c = j->C + lo * j->sc;
    c[0] = NAN;
    bf_sgemm_batch_strided_sym(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, CblasNoTrans, j->M, j->N, j->K,
                               1.0f, j->A + lo * j->sa, j->lda, (blasint)j->sa, j->B + lo * j->sb, j->ldb,
                               (blasint)j->sb, 0.0f, c, j->ldc, (blasint)j->sc, (blasint)(hi - lo));
    if (isnan(c[0])) atomic_store(&j->failed, 1);
}

static int batch_run(batch_job *j, int count) {
    const int threads = bf_par_threads();
    j->count = count;
    j->parts = count < threads ? count : threads;
    atomic_store(&j->failed, 0);
    bf_par_for(j->parts, threads, batch_part, j);
    return !atomic_load(&j->failed);
}

// C (M,N) = A (M,Kd; lda) @ B (Kd,N)
static void gemm_nn(int M, int N, int Kd, const float *A, int lda, const float *B, float *C) {
    int rows, group;
    if (batch_plan(M, N, Kd, &rows, &group)) {
        while (M >= rows) {
            const int P = M / rows < group ? M / rows : group;
            batch_job j = {.ta = 0, .M = rows, .N = N, .K = Kd, .lda = lda, .sa = rows * lda, .ldb = N, .sb = 0, .ldc = N,
                           .sc = rows * N, .A = A, .B = B, .C = C};
            if (!batch_run(&j, P)) break; /* failed (or NaN data): plain GEMM below */
            A += (size_t)P * rows * lda;
            C += (size_t)P * rows * N;
            M -= P * rows;
        }
    }
    if (M > 0) bf_sgemm(0, 0, M, N, Kd, 1.0f, A, lda, B, N, 0.0f, C, N);
}

// acc (Kd,N) += A^T (Kd,M) @ D (M,N); A (M,Kd; lda); part: BF_BATCH_MAXP*Kd*N floats or NULL
static void gemm_tn_acc(int M, int N, int Kd, const float *A, int lda, const float *D,
                        float *acc, float *part) {
    const size_t blk = (size_t)Kd * N;
    int rows, group;
    if (part && batch_plan(M, N, Kd, &rows, &group)) {
        while (M >= rows) {
            const int P = M / rows < group ? M / rows : group;
            batch_job j = {.ta = 1, .M = Kd, .N = N, .K = rows, .lda = lda, .sa = rows * lda, .ldb = N, .sb = rows * N,
                           .ldc = N, .sc = (long)blk, .A = A, .B = D, .C = part};
            if (!batch_run(&j, P)) break; /* failed (or NaN data): plain GEMM below */
            for (int p = 0; p < P; p++) {
                const float *q = part + (size_t)p * blk;
                for (size_t i = 0; i < blk; i++) acc[i] += q[i];
            }
            A += (size_t)P * rows * lda;
            D += (size_t)P * rows * N;
            M -= P * rows;
        }
    }
    for (int s = 0; s < M; s += BF_CONV_DW_ROWS) {
        const int m = M - s < BF_CONV_DW_ROWS ? M - s : BF_CONV_DW_ROWS;
        bf_sgemm(1, 0, Kd, N, m, 1.0f, A + (size_t)s * lda, lda, D + (size_t)s * N, N, 1.0f, acc,
                 N);
    }
}

/* ---- geometry ---- */

/* the core's one check of a geometry (core/conv_check.h) */
bf_status bf_cpu_check_geom(const bf_conv_geom *g, const char *op, int pooling) {
    return bf_conv_check_geom(g, op, pooling);
}

/* col == inp viewed as (B*OH*OW, KK): no im2col needed */
static int conv_direct(const bf_conv_geom *g) {
    if (g->PT || g->PL) return 0;
    if (g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1) return 1;
    return g->KH == g->H && g->KW == g->W && g->OH == 1 && g->OW == 1;
}

/* Small KK: the bias rides in the GEMM as an extra im2col column of ones and an
 * extra row b under the weights, saving a pass over the output. */
#define BF_CONV_AUG_MAX_KK 128
static int conv_aug(const bf_conv_geom *g) {
    return !conv_direct(g) && (long)g->KH * g->KW * g->C <= BF_CONV_AUG_MAX_KK;
}

long bf_cpu_conv2d_tile_rows(const bf_conv_geom *g) {
    if (conv_direct(g)) return 0;
    const long ld = (long)g->KH * g->KW * g->C + conv_aug(g);
    const long total = (long)g->B * g->OH * g->OW;
    long tile = (long)(bf_cpu_conv2d_ws_cap / (sizeof(float) * (size_t)ld));
    if (tile < g->OW) tile = g->OW; /* never less than one output row */
    if (tile > INT_MAX / ld) tile = INT_MAX / ld;
    if (tile > total) tile = total;
    return tile < 1 ? 1 : tile;
}

/* Workspace, in floats (kk = KH*KW*C, kg = kk + aug, aug = 1 when kk <= 128):
 *   col   tile * kg             im2col tile (backward: also dcol), 0 when direct
 *   wa    aug * kg * K          forward: [w; b]   backward: acc of [dw; db]
 *   part  32 * kg * K           backward only, when K*kg <= 4096: dw partials
 * tile = max(OW, cap / (4*kg)) capped at B*OH*OW, so for large batches
 * ws <= max(cap, OW*kg*4) + (1 + 32) * kg * K * 4 bytes, independent of B. */
size_t bf_cpu_conv2d_workspace_bytes(bf_backend *be, const bf_conv_geom *g, int backward) {
    (void)be;
    if (bf_cpu_check_geom(g, "conv2d", 0) != BF_OK) return 0;
    if (bf_cpu_conv2d_direct_ok(g)) return bf_cpu_conv2d_direct_ws_floats(g, backward) * sizeof(float);
    const size_t tile = (size_t)bf_cpu_conv2d_tile_rows(g);
    const size_t aug = (size_t)conv_aug(g), kg = (size_t)g->KH * g->KW * g->C + aug;
    const size_t K = (size_t)g->K;
    size_t n = tile * kg + aug * kg * K;
    if (backward && batch_eligible((long)K, (long)kg)) n += (size_t)BF_BATCH_MAXP * kg * K;
    return n * sizeof(float);
}

/* dst[0..n) = src[0..n) for the short runs of im2col (often 3..16 floats):
 * straight-line 16-byte moves (overlapping at the tail) instead of a loop,
 * which the compiler would turn back into a call to memcpy */
static inline void mv4(float *restrict d, const float *restrict s) {
    memcpy(d, s, 4 * sizeof(float));
}
static inline void copy_run(float *restrict dst, const float *restrict src, size_t n) {
    if (n > 16) {
        memcpy(dst, src, n * sizeof(float));
    } else if (n >= 4) {
        mv4(dst, src);
        mv4(dst + n - 4, src + n - 4);
        if (n > 8) mv4(dst + 4, src + 4);
        if (n > 12) mv4(dst + 8, src + 8);
    } else {
        dst[0] = src[0];
        if (n > 1) dst[1] = src[1];
        if (n > 2) dst[2] = src[2];
    }
}

/* Output columns ow in [*lo, *hi) have their whole window row inside the image
 * (0 <= ow*SW - PL and ow*SW - PL + KW <= W); the others touch the padding. */
static void interior_cols(const bf_conv_geom *g, int *lo, int *hi) {
    int a = (g->PL + g->SW - 1) / g->SW;
    int e = g->W - g->KW + g->PL;
    int b = e < 0 ? 0 : e / g->SW + 1;
    if (b > g->OW) b = g->OW;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
}

/* One window row of an output column that touches the padding: input row
 * src (W,C), window columns iw0 .. iw0+KW-1, d the KW*C floats of col.
 * add == 0: d = window (padded cells -> 0); add == 1: the reverse, src += d
 * (col2im), padded cells dropped. */
static inline void seg_edge(float *restrict d, float *restrict src, int iw0,
                            const bf_conv_geom *g, int add) {
    const int C = g->C;
    for (int kw = 0; kw < g->KW; kw++, d += C) {
        const int iw = iw0 + kw;
        if (iw < 0 || iw >= g->W) {
            if (!add) memset(d, 0, (size_t)C * sizeof(float));
        } else if (add) {
            float *s = src + (size_t)iw * C;
            for (int c = 0; c < C; c++) s[c] += d[c];
        } else {
            copy_run(d, src + (size_t)iw * C, (size_t)C);
        }
    }
}

/* Walk rows r0 .. r0+M of the im2col matrix (row stride ld >= KK) in segments of
 * one output row. add == 0: col = im2col(img); add == 1: img += col2im(col). */
static void im2col_walk(float *col, float *img, const bf_conv_geom *g, long r0, int M, int ld,
                        int add) {
    const int H = g->H, W = g->W, C = g->C, KH = g->KH, OH = g->OH, OW = g->OW;
    const int SW = g->SW, PL = g->PL;
    const size_t rowlen = (size_t)g->KW * C, imsz = (size_t)H * W * C;
    int lo, hi;
    interior_cols(g, &lo, &hi);
    long t = r0 / OW;
    int ow = (int)(r0 - t * OW), oh = (int)(t % OH);
    long b = t / OH;
    float *dst = col;
    for (int m = 0; m < M;) {
        const int n = OW - ow < M - m ? OW - ow : M - m; /* columns ow .. ow+n-1 */
        const int end = ow + n;
        const int a = lo > ow ? (lo < end ? lo : end) : ow; /* interior part [a, z) */
        const int z = hi < end ? (hi > a ? hi : a) : end;
        float *im = img + (size_t)b * imsz;
        const int ih0 = oh * g->SH - g->PT;
        for (int kh = 0; kh < KH; kh++) {
            float *d = dst + (size_t)kh * rowlen;
            const int ih = ih0 + kh;
            if (ih < 0 || ih >= H) {
                if (!add)
                    for (int j = 0; j < n; j++) memset(d + (size_t)j * ld, 0, rowlen * sizeof(float));
                continue;
            }
            float *src = im + (size_t)ih * W * C;
            int o = ow;
            for (; o < a; o++, d += ld) seg_edge(d, src, o * SW - PL, g, add);
            if (o < z) {
                float *s = src + (size_t)(o * SW - PL) * C;
                const size_t step = (size_t)SW * C;
                if (add) { /* kw outer: one pass never touches a cell twice, so no
                            * store-to-load stalls between overlapping windows */
                    for (int kw = 0; kw < g->KW; kw++) {
                        float *si = s + (size_t)kw * C;
                        const float *di = d + (size_t)kw * C;
                        for (int q = o; q < z; q++, di += ld, si += step)
                            for (int c = 0; c < C; c++) si[c] += di[c];
                    }
                    d += (size_t)(z - o) * ld;
                    o = z;
                } else {
                    for (; o < z; o++, d += ld, s += step) copy_run(d, s, rowlen);
                }
            }
            for (; o < end; o++, d += ld) seg_edge(d, src, o * SW - PL, g, add);
        }
        dst += (size_t)n * ld;
        m += n;
        ow = end;
        if (ow == OW) {
            ow = 0;
            if (++oh == OH) {
                oh = 0;
                b++;
            }
        }
    }
}

// col (M,ld) = rows r0 .. r0+M of the im2col matrix of inp (B,H,W,C); columns (kh,kw,c)
static void im2col(float *col, const float *inp, const bf_conv_geom *g, long r0, int M, int ld) {
    im2col_walk(col, (float *)inp, g, r0, M, ld, 0); /* inp is only read when add == 0 */
}

// dinp (B,H,W,C) += col2im(dcol (M,ld)) for rows r0 .. r0+M
static void col2im_add(float *dinp, float *dcol, const bf_conv_geom *g, long r0, int M, int ld) {
    im2col_walk(dcol, dinp, g, r0, M, ld, 1);
}

// o (M,K) += b (K)
static void add_bias(float *restrict o, const float *restrict b, long M, int K) {
    for (long m = 0; m < M; m++, o += K)
        for (int k = 0; k < K; k++) o[k] += b[k];
}

// db (K) += column sums of d (M,K)
static void col_sums(float *restrict db, const float *restrict d, long M, int K) {
    for (long m = 0; m < M; m++, d += K)
        for (int k = 0; k < K; k++) db[k] += d[k];
}

/* rows per GEMM on the direct path: keeps M and M*ld within int */
static long direct_chunk(long kk, int K) {
    long ld = kk > K ? kk : K;
    long c = (INT_MAX / 2) / ld;
    return c < 1 ? 1 : c;
}

// out (B,OH,OW,K) = conv(inp (B,H,W,C), w (KH,KW,C,K)) + b (K)
bf_status bf_cpu_conv2d_forward(bf_backend *be, float *out, void *ws, const float *inp,
                                const float *w, const float *b, const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "conv2d", 0));
    if (!out || !inp || !w) return BF_FAIL(BF_ERR_ARG, "conv2d_forward: NULL tensor");
    if (bf_cpu_conv2d_direct_ok(g)) { /* stride 1, few channels: conv2d_direct.c */
        bf_cpu_conv2d_direct_forward(out, inp, w, b, g);
        return BF_OK;
    }
    const int K = g->K;
    const int kk = g->KH * g->KW * g->C;
    const long total = (long)g->B * g->OH * g->OW;
    const long tile = bf_cpu_conv2d_tile_rows(g);
    if (tile == 0) { /* direct: out (total,K) = inp (total,kk) @ w (kk,K) */
        const long chunk = direct_chunk(kk, K);
        for (long r0 = 0; r0 < total; r0 += chunk) {
            const int M = (int)(total - r0 < chunk ? total - r0 : chunk);
            float *o = out + (size_t)r0 * K;
            gemm_nn(M, K, kk, inp + (size_t)r0 * kk, kk, w, o);
            if (b) add_bias(o, b, M, K);
        }
        return BF_OK;
    }
    if (!ws) return BF_FAIL(BF_ERR_ARG, "conv2d_forward: workspace required (%ld rows)", tile);
    const int aug = conv_aug(g), ld = kk + aug;
    float *col = (float *)ws;
    const float *wg = w; /* (kg,K) weights of the GEMM */
    int kg = kk;
    if (aug && b) { /* wa (kk+1,K) = [w; b]; col[:,kk] = 1 */
        float *wa = col + (size_t)tile * ld;
        memcpy(wa, w, (size_t)kk * K * sizeof(float));
        memcpy(wa + (size_t)kk * K, b, (size_t)K * sizeof(float));
        for (long m = 0; m < tile; m++) col[(size_t)m * ld + kk] = 1.0f;
        wg = wa;
        kg = kk + 1;
    }
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        float *o = out + (size_t)r0 * K;
        im2col(col, inp, g, r0, M, ld); /* leaves column kk alone */
        gemm_nn(M, K, kg, col, ld, wg, o);
        if (b && !aug) add_bias(o, b, M, K);
    }
    return BF_OK;
}

// dinp (B,H,W,C) = col2im(dout @ w^T); dw (KH,KW,C,K) += col^T @ dout; db (K) += sum dout
bf_status bf_cpu_conv2d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                 const float *dout, const float *inp, const float *w,
                                 const bf_conv_geom *g) {
    (void)be;
    BF_TRY(bf_cpu_check_geom(g, "conv2d", 0));
    if (!dout || !inp || !w) return BF_FAIL(BF_ERR_ARG, "conv2d_backward: NULL tensor");
    if (bf_cpu_conv2d_direct_ok(g)) { /* stride 1, few channels: conv2d_direct.c */
        if (!ws) return BF_FAIL(BF_ERR_ARG, "conv2d_backward: workspace required (direct path)");
        bf_cpu_conv2d_direct_backward(dinp, dw, db, (float *)ws, dout, inp, w, g);
        return BF_OK;
    }
    const int K = g->K;
    const int kk = g->KH * g->KW * g->C;
    const long total = (long)g->B * g->OH * g->OW;
    const long tile = bf_cpu_conv2d_tile_rows(g);
    const int aug = dw ? conv_aug(g) : 0, kg = kk + aug, ld = kg; /* dw NULL: a frozen kernel */
    float *col = (float *)ws;
    float *acc = ws ? col + (size_t)tile * ld : NULL;               /* (kg,K) when aug */
    float *part = ws && batch_eligible(K, kg) ? acc + (size_t)aug * kg * K : NULL;
    if (tile == 0) { /* direct: col == inp */
        const long chunk = direct_chunk(kk, K);
        for (long r0 = 0; r0 < total; r0 += chunk) {
            const int M = (int)(total - r0 < chunk ? total - r0 : chunk);
            const float *x = inp + (size_t)r0 * kk, *d = dout + (size_t)r0 * K;
            if (dw) gemm_tn_acc(M, K, kk, x, kk, d, dw, part);
            if (db) col_sums(db, d, M, K);
            if (dinp) bf_sgemm(0, 1, M, kk, K, 1.0f, d, K, w, K, 0.0f, dinp + (size_t)r0 * kk, kk);
        }
        return BF_OK;
    }
    if (!ws) return BF_FAIL(BF_ERR_ARG, "conv2d_backward: workspace required (%ld rows)", tile);
    /* aug: acc (kk+1,K) = col_aug^T @ dout holds dw and, in its last row (the
     * column of ones), db; it lives where forward keeps [w; b] */
    if (aug) {
        memset(acc, 0, (size_t)kg * K * sizeof(float));
        for (long m = 0; m < tile; m++) col[(size_t)m * ld + kk] = 1.0f;
    }
    if (dinp) memset(dinp, 0, (size_t)g->B * g->H * g->W * g->C * sizeof(float));
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        const float *d = dout + (size_t)r0 * K;
        if (dw) {
            im2col(col, inp, g, r0, M, ld); /* leaves column kk (ones) alone */
            gemm_tn_acc(M, K, kg, col, ld, d, aug ? acc : dw, part);
        }
        if (db && !aug) col_sums(db, d, M, K);
        if (dinp) {
            bf_sgemm(0, 1, M, kk, K, 1.0f, d, K, w, K, 0.0f, col, ld); /* dcol (M,kk) */
            col2im_add(dinp, col, g, r0, M, ld);
        }
    }
    if (aug) {
        for (size_t i = 0; i < (size_t)kk * K; i++) dw[i] += acc[i];
        if (db)
            for (int k = 0; k < K; k++) db[k] += acc[(size_t)kk * K + k];
    }
    return BF_OK;
}

/* ---- the im2col walk for the other convolutions (Conv2DTranspose, Conv1D) ---- */

void bf_cpu_conv2d_im2col(float *col, const float *inp, const bf_conv_geom *g, long r0, int M, int ld) {
    im2col(col, inp, g, r0, M, ld);
}

void bf_cpu_conv2d_col2im_add(float *dinp, float *dcol, const bf_conv_geom *g, long r0, int M, int ld) {
    col2im_add(dinp, dcol, g, r0, M, ld);
}
