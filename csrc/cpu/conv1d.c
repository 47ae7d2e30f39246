/* conv1d.c - Conv1D on the CPU, NWC: inp (B,T,C), w (KW,C,K) as Keras, out (B,OT,K).
 * An undilated 'valid' or 'same' Conv1D is a Conv2D of a 1 x T image: its
 * forward runs on the Conv2D kernels (conv2d.c: tuned im2col, batched GEMMs).
 * A 1-wide unpadded one needs no im2col in backward either (two GEMMs on inp).
 * Everything else - dilated or causal ('causal': PL = (KW-1)*D) convolutions,
 * and the backward of wider ones, where one dw GEMM over the whole tile
 * measured 1.5-2.5x faster than conv2d.c's chunked dw on (T, C) shapes -
 * runs here: the im2col matrix has one row per output step r = b*OT + ot and
 * KK = KW*C columns ordered (k, c), the row order of w seen as a (KK,K)
 * matrix, so out = col @ w; row r's tap k reads step ot*S - PL + k*D (zeros
 * outside [0, T)). It is built TILE rows at a time (bounded by
 * bf_cpu_conv2d_ws_cap, at least one row), so the workspace does not grow
 * with B. Backward: dw += col^T @ dout, db += sum dout, and
 * dcol = dout @ w^T scattered back into dinp. Backward ADDS into dw / db and
 * OVERWRITES dinp; dinp, dw and db may be NULL. */
#include <limits.h>
#include <string.h>

#include "blas.h"
#include "cpu_convx.h"

bf_status bf_cpu_conv1d_check(const bf_conv1d_geom *g) {
    if (!g) return BF_FAIL(BF_ERR_ARG, "conv1d: no geometry");
    if (g->B <= 0 || g->T <= 0 || g->C <= 0 || g->OT <= 0 || g->K <= 0 || g->KW <= 0 || g->S <= 0 || g->D <= 0 ||
        g->PL < 0)
        return BF_FAIL(BF_ERR_SHAPE, "conv1d: sizes must be positive (B=%d T=%d C=%d OT=%d K=%d kernel %d stride %d "
                       "dilation %d padding %d)", g->B, g->T, g->C, g->OT, g->K, g->KW, g->S, g->D, g->PL);
    if ((long long)g->KW * g->C > INT_MAX / 2 || (long long)g->T * g->C > INT_MAX || (long long)g->OT * g->K > INT_MAX ||
        (long long)(g->KW - 1) * g->D + (long long)(g->OT - 1) * g->S > INT_MAX / 2)
        return BF_FAIL(BF_ERR_SHAPE, "conv1d: a sample is too large (T=%d C=%d K=%d)", g->T, g->C, g->K);
    return BF_OK;
}

/* the Conv2D of a 1 x T image that this Conv1D is, when there is one */
static int as_conv2d(const bf_conv1d_geom *g, bf_conv_geom *c) {
    if (g->D != 1) return 0;
    int total = (g->OT - 1) * g->S + g->KW - g->T;
    if (total < 0) total = 0;
    int valid = g->PL == 0 && g->KW <= g->T && g->OT == (g->T - g->KW) / g->S + 1;
    int same = g->OT == (g->T + g->S - 1) / g->S && g->PL == total / 2;
    if (!valid && !same) return 0;
    *c = (bf_conv_geom){.B = g->B, .H = 1, .W = g->T, .C = g->C, .OH = 1, .OW = g->OT, .K = g->K,
                        .KH = 1, .KW = g->KW, .SH = 1, .SW = g->S, .PT = 0, .PL = g->PL};
    return 1;
}

static long tile_rows(const bf_conv1d_geom *g) {
    const long kk = (long)g->KW * g->C, total = (long)g->B * g->OT;
    long tile = (long)(bf_cpu_conv2d_ws_cap / (sizeof(float) * (size_t)kk));
    if (tile > INT_MAX / kk) tile = INT_MAX / kk;
    if (tile > total) tile = total;
    return tile < 1 ? 1 : tile;
}

/* the backward of a 1-wide unpadded Conv1D: inp is its own im2col matrix */
static int direct(const bf_conv1d_geom *g) { return g->KW == 1 && g->S == 1 && g->PL == 0 && g->D == 1; }

size_t bf_cpu_conv1d_workspace_bytes(bf_backend *be, const bf_conv1d_geom *g, int backward) {
    bf_conv_geom c;
    if (bf_cpu_conv1d_check(g) != BF_OK) return 0;
    if (backward && direct(g)) return 0;
    if (!backward && as_conv2d(g, &c)) return bf_cpu_conv2d_workspace_bytes(be, &c, 0);
    return (size_t)tile_rows(g) * (size_t)g->KW * (size_t)g->C * sizeof(float);
}

/* Rows r0 .. r0+M of the im2col matrix (KK floats each). add == 0:
 * col = im2col(x); add == 1: x += col2im(col) (padded taps dropped). */
static void walk(float *col, float *x, const bf_conv1d_geom *g, long r0, int M, int add) {
    const int C = g->C, T = g->T, KW = g->KW, D = g->D;
    const size_t kk = (size_t)KW * C, rc = (size_t)C * sizeof(float);
    long b = r0 / g->OT;
    int ot = (int)(r0 - b * g->OT);
    for (int m = 0; m < M; m++) {
        float *d = col + (size_t)m * kk, *xb = x + (size_t)b * T * C;
        const int t0 = ot * g->S - g->PL;
        if (D == 1 && t0 >= 0 && t0 + KW <= T) { /* the window is one contiguous run */
            float *s = xb + (size_t)t0 * C;
            if (add)
                for (size_t i = 0; i < kk; i++) s[i] += d[i];
            else
                memcpy(d, s, kk * sizeof(float));
        } else {
            for (int k = 0; k < KW; k++, d += C) {
                const int t = t0 + k * D;
                if (t < 0 || t >= T) {
                    if (!add) memset(d, 0, rc);
                } else if (add) {
                    float *s = xb + (size_t)t * C;
                    for (int c = 0; c < C; c++) s[c] += d[c];
                } else {
                    memcpy(d, xb + (size_t)t * C, rc);
                }
            }
        }
        if (++ot == g->OT) { ot = 0; b++; }
    }
}

// out (B,OT,K) = conv(inp (B,T,C), w (KW,C,K)) + b (K)
bf_status bf_cpu_conv1d_forward(bf_backend *be, float *out, void *ws, const float *inp, const float *w,
                                const float *b, const bf_conv1d_geom *g) {
    BF_TRY(bf_cpu_conv1d_check(g));
    bf_conv_geom c;
    if (as_conv2d(g, &c)) return bf_cpu_conv2d_forward(be, out, ws, inp, w, b, &c);
    if (!out || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv1d_forward: NULL tensor or workspace");
    const int K = g->K, kk = g->KW * g->C;
    const long total = (long)g->B * g->OT, tile = tile_rows(g);
    float *col = (float *)ws;
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        float *o = out + (size_t)r0 * K;
        walk(col, (float *)inp, g, r0, M, 0); /* inp is only read when add == 0 */
        bf_sgemm(0, 0, M, K, kk, 1.0f, col, kk, w, K, 0.0f, o, K);
        if (b)
            for (int m = 0; m < M; m++)
                for (int k = 0; k < K; k++) o[(size_t)m * K + k] += b[k];
    }
    return BF_OK;
}

// dinp (B,T,C) = col2im(dout @ w^T); dw (KW,C,K) += col^T @ dout; db (K) += sum dout
bf_status bf_cpu_conv1d_backward(bf_backend *be, float *dinp, float *dw, float *db, void *ws, const float *dout,
                                 const float *inp, const float *w, const bf_conv1d_geom *g) {
    BF_TRY(bf_cpu_conv1d_check(g));
    (void)be;
    if (direct(g)) { /* inp (B*T, C) is its own im2col matrix: no workspace */
        const long total = (long)g->B * g->T, chunk = 1L << 20;
        for (long r0 = 0; r0 < total; r0 += chunk) {
            const int M = (int)(total - r0 < chunk ? total - r0 : chunk);
            const float *x = inp + (size_t)r0 * g->C, *d = dout + (size_t)r0 * g->K;
            if (dw) bf_sgemm(1, 0, g->C, g->K, M, 1.0f, x, g->C, d, g->K, 1.0f, dw, g->K);
            if (db)
                for (int m = 0; m < M; m++)
                    for (int k = 0; k < g->K; k++) db[k] += d[(size_t)m * g->K + k];
            if (dinp) bf_sgemm(0, 1, M, g->C, g->K, 1.0f, d, g->K, w, g->K, 0.0f, dinp + (size_t)r0 * g->C, g->C);
        }
        return BF_OK;
    }
    if (!dout || !inp || !w || !ws) return BF_FAIL(BF_ERR_ARG, "conv1d_backward: NULL tensor or workspace");
    const int K = g->K, kk = g->KW * g->C;
    const long total = (long)g->B * g->OT, tile = tile_rows(g);
    float *col = (float *)ws;
    if (dinp) memset(dinp, 0, (size_t)g->B * g->T * g->C * sizeof(float));
    for (long r0 = 0; r0 < total; r0 += tile) {
        const int M = (int)(total - r0 < tile ? total - r0 : tile);
        const float *d = dout + (size_t)r0 * K;
        walk(col, (float *)inp, g, r0, M, 0);
        if (dw) bf_sgemm(1, 0, kk, K, M, 1.0f, col, kk, d, K, 1.0f, dw, K);
        if (db)
            for (int m = 0; m < M; m++)
                for (int k = 0; k < K; k++) db[k] += d[(size_t)m * K + k];
        if (dinp) {
            bf_sgemm(0, 1, M, kk, K, 1.0f, d, K, w, K, 0.0f, col, kk); /* dcol (M,kk) */
            walk(col, dinp, g, r0, M, 1);
        }
    }
    return BF_OK;
}
