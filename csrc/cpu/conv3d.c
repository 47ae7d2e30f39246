/* conv3d.c - Conv3D and Conv3DTranspose on the CPU: im2col + sgemm, the
 * im2col built one depth plane at a time by Conv2D's walk (conv2d.c).
 * Layouts NDHWC: inp (B,D,H,W,C), w (KD,KH,KW,C,K) as Keras, out
 * (B,OD,OH,OW,K). The im2col matrix has one row per output position
 * r = ((b*OD + od)*OH + oh)*OW + ow and KK = KD*KK2 columns (KK2 =
 * KH*KW*C) ordered (kd, kh, kw, c), the row order of w seen as (KK,K). Its
 * columns kd*KK2 .. of output plane (b, od) are the 2D im2col rows of the
 * input plane id = od*SD - PF + kd, an image of its own (g->p over B*D
 * images), or zeros where id falls in the padding. Tiles are whole output
 * planes (at least one, bf_cpu_conv2d_ws_cap bytes otherwise), so the
 * workspace does not grow with the batch. Conv3DTranspose is the adjoint
 * of g (conv2d_transpose.c's scheme): forward out = col2im(inp @ w^T) + b,
 * backward col = im2col(dout), dinp = col @ w, dw += col^T @ inp. Backward
 * ADDS into dw / db and OVERWRITES dinp; each may be NULL. No allocation. */
#include <limits.h>
#include <string.h>

#include "blas.h"
#include "conv_check.h"
#include "cpu_convx.h"

/* the plane geometry, the depth axis 'valid' or 'same', and int-sized rows */
static bf_status check3d(const bf_conv3d_geom *g, const char *op) {
    BF_TRY(bf_conv_check_geom(&g->p, op, 0));
    if (g->D <= 0 || g->OD <= 0 || g->KD <= 0 || g->SD <= 0 || g->PF < 0)
        return BF_FAIL(BF_ERR_SHAPE, "%s: depth sizes must be positive (D=%d OD=%d KD=%d SD=%d PF=%d)", op, g->D,
                       g->OD, g->KD, g->SD, g->PF);
    const int valid = g->KD <= g->D && g->PF == 0 && g->OD == (g->D - g->KD) / g->SD + 1;
    if (!valid && !bf_conv_same_dim(g->D, g->OD, g->KD, g->SD, g->PF))
        return BF_FAIL(BF_ERR_SHAPE, "%s: output depth %d with padding %d does not follow from depth %d, window %d, "
                       "stride %d ('valid' or 'same')", op, g->OD, g->PF, g->D, g->KD, g->SD);
    const long long kk = (long long)g->KD * g->p.KH * g->p.KW * g->p.C;
    if (kk > INT_MAX / 2 || (long long)g->p.OH * g->p.OW * kk > INT_MAX)
        return BF_FAIL(BF_ERR_SHAPE, "%s: one output plane's im2col rows are too large", op);
    return BF_OK;
}

static long kk_of(const bf_conv3d_geom *g) { return (long)g->KD * g->p.KH * g->p.KW * g->p.C; }

/* output planes per tile: the cap's worth, at least one, at most all */
static long tile_planes(const bf_conv3d_geom *g) {
    const long rows = (long)g->p.OH * g->p.OW, planes = (long)g->p.B * g->OD;
    long t = (long)(bf_cpu_conv2d_ws_cap / (sizeof(float) * (size_t)(rows * kk_of(g))));
    if (t > INT_MAX / (rows * kk_of(g))) t = INT_MAX / (rows * kk_of(g));
    if (t > planes) t = planes;
    return t < 1 ? 1 : t;
}

size_t bf_cpu_conv3d_workspace_bytes(bf_backend *be, const bf_conv3d_geom *g, int transpose, int backward) {
    (void)be;
    (void)transpose;
    (void)backward;
    if (check3d(g, "conv3d") != BF_OK) return 0;
    return (size_t)tile_planes(g) * g->p.OH * g->p.OW * (size_t)kk_of(g) * sizeof(float);
}

/* add == 0: col (n planes of OH*OW rows, ld KK) = im2col of vol (B,D,H,W,C) for output planes pl0 .. pl0+n;
 * add == 1: vol += col2im(col) */
static void vol_walk(float *col, float *vol, const bf_conv3d_geom *g, long pl0, long n, int add) {
    bf_conv_geom q = g->p; /* the depth planes as B*D images */
    q.B = g->p.B * g->D;
    const int rows = g->p.OH * g->p.OW, kk2 = g->p.KH * g->p.KW * g->p.C, ld = (int)kk_of(g);
    for (long pl = pl0; pl < pl0 + n; pl++) {
        const long b = pl / g->OD;
        const int od = (int)(pl % g->OD);
        float *base = col + (size_t)(pl - pl0) * rows * ld;
        for (int kd = 0; kd < g->KD; kd++) {
            float *d = base + (size_t)kd * kk2;
            const int id = od * g->SD - g->PF + kd;
            const long r0 = (b * g->D + id) * (long)rows;
            if (id >= 0 && id < g->D) {
                if (add) bf_cpu_conv2d_col2im_add(vol, d, &q, r0, rows, ld);
                else bf_cpu_conv2d_im2col(d, vol, &q, r0, rows, ld);
            } else if (!add) {
                for (int m = 0; m < rows; m++) memset(d + (size_t)m * ld, 0, (size_t)kk2 * sizeof(float));
            }
        }
    }
}

// o (n,K) += b (K)
static void add_bias(float *restrict o, const float *restrict b, long n, int K) {
    for (long m = 0; m < n; m++, o += K)
        for (int k = 0; k < K; k++) o[k] += b[k];
}

// db (K) += column sums of d (n,K)
static void col_sums(float *restrict db, const float *restrict d, long n, int K) {
    for (long m = 0; m < n; m++, d += K)
        for (int k = 0; k < K; k++) db[k] += d[k];
}

// out (B,OD,OH,OW,K) = conv(inp (B,D,H,W,C), w (KD,KH,KW,C,K)) + b (K)
bf_status bf_cpu_conv3d_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                const float *b, const bf_conv3d_geom *g) {
    (void)be;
    BF_TRY(check3d(g, "conv3d"));
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv3d_forward: NULL tensor or workspace");
    const long rows = (long)g->p.OH * g->p.OW, planes = (long)g->p.B * g->OD, tp = tile_planes(g);
    const int K = g->p.K, kk = (int)kk_of(g);
    float *col = (float *)ws;
    for (long pl0 = 0; pl0 < planes; pl0 += tp) {
        const long n = planes - pl0 < tp ? planes - pl0 : tp;
        vol_walk(col, (float *)inp, g, pl0, n, 0); /* inp is only read when add == 0 */
        bf_sgemm(0, 0, (int)(n * rows), K, kk, 1.0f, col, kk, w, K, 0.0f, out + (size_t)pl0 * rows * K, K);
    }
    if (b) add_bias(out, b, planes * rows, K);
    return BF_OK;
}

// dinp (B,D,H,W,C) = col2im(dout @ w^T); dw (KD,KH,KW,C,K) += col^T @ dout; db (K) += sum dout
bf_status bf_cpu_conv3d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout,
                                 const float *inp, const float *w, const bf_conv3d_geom *g) {
    (void)be;
    BF_TRY(check3d(g, "conv3d"));
    if (!dout || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv3d_backward: NULL tensor or workspace");
    const long rows = (long)g->p.OH * g->p.OW, planes = (long)g->p.B * g->OD, tp = tile_planes(g);
    const int K = g->p.K, kk = (int)kk_of(g);
    float *col = (float *)ws;
    if (db) col_sums(db, dout, planes * rows, K);
    if (dinp) memset(dinp, 0, (size_t)g->p.B * g->D * g->p.H * g->p.W * g->p.C * sizeof(float));
    for (long pl0 = 0; pl0 < planes; pl0 += tp) {
        const long n = planes - pl0 < tp ? planes - pl0 : tp;
        const int M = (int)(n * rows);
        const float *d = dout + (size_t)pl0 * rows * K;
        if (dw) {
            vol_walk(col, (float *)inp, g, pl0, n, 0);
            bf_sgemm(1, 0, kk, K, M, 1.0f, col, kk, d, K, 1.0f, dw, K);
        }
        if (dinp) {
            bf_sgemm(0, 1, M, kk, K, 1.0f, d, K, w, K, 0.0f, col, kk); /* dcol (M,kk) */
            vol_walk(col, dinp, g, pl0, n, 1);
        }
    }
    return BF_OK;
}

// out (B,D,H,W,C) = col2im(inp (B,OD,OH,OW,K) @ w^T) + b (C)
bf_status bf_cpu_conv3d_transpose_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                          const float *b, const bf_conv3d_geom *g) {
    (void)be;
    BF_TRY(check3d(g, "conv3d_transpose"));
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv3d_transpose_forward: NULL tensor or workspace");
    const long rows = (long)g->p.OH * g->p.OW, planes = (long)g->p.B * g->OD, tp = tile_planes(g);
    const long n_out = (long)g->p.B * g->D * g->p.H * g->p.W;
    const int K = g->p.K, kk = (int)kk_of(g);
    float *col = (float *)ws;
    memset(out, 0, (size_t)n_out * g->p.C * sizeof(float));
    for (long pl0 = 0; pl0 < planes; pl0 += tp) {
        const long n = planes - pl0 < tp ? planes - pl0 : tp;
        bf_sgemm(0, 1, (int)(n * rows), kk, K, 1.0f, inp + (size_t)pl0 * rows * K, K, w, K, 0.0f, col, kk);
        vol_walk(col, out, g, pl0, n, 1);
    }
    if (b) add_bias(out, b, n_out, g->p.C);
    return BF_OK;
}

// dinp (B,OD,OH,OW,K) = im2col(dout) @ w; dw (KD,KH,KW,C,K) += im2col(dout)^T @ inp; db (C) += sum dout
bf_status bf_cpu_conv3d_transpose_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws,
                                           const float *dout, const float *inp, const float *w,
                                           const bf_conv3d_geom *g) {
    (void)be;
    BF_TRY(check3d(g, "conv3d_transpose"));
    if (!dout || !inp || !w || !ws)
        return BF_FAIL(BF_ERR_ARG, "conv3d_transpose_backward: NULL tensor or workspace");
    const long rows = (long)g->p.OH * g->p.OW, planes = (long)g->p.B * g->OD, tp = tile_planes(g);
    const int K = g->p.K, kk = (int)kk_of(g);
    float *col = (float *)ws;
    if (db) col_sums(db, dout, (long)g->p.B * g->D * g->p.H * g->p.W, g->p.C);
    for (long pl0 = 0; pl0 < planes; pl0 += tp) {
        const long n = planes - pl0 < tp ? planes - pl0 : tp;
        const int M = (int)(n * rows);
        vol_walk(col, (float *)dout, g, pl0, n, 0);
        if (dw) bf_sgemm(1, 0, kk, K, M, 1.0f, col, kk, inp + (size_t)pl0 * rows * K, K, 1.0f, dw, K);
        if (dinp) bf_sgemm(0, 0, M, K, kk, 1.0f, col, kk, w, K, 0.0f, dinp + (size_t)pl0 * rows * K, K);
    }
    return BF_OK;
}
