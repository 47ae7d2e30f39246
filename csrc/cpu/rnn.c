/* rnn.c - one direction of SimpleRNN / LSTM / GRU on the CPU (Keras 3 cells).
 * Layouts, per row b and input position p (batch-major, as the data):
 *   gates (B,T,G*U): x @ W + b for all steps in ONE GEMM (B*T rows), then per
 *     step + h_prev @ U (one GEMM, B rows strided by T) and the activations
 *     in place; kept for backward, where they are overwritten by their
 *     gradients. LSTM i,f,c,o; GRU z,r,hh; SimpleRNN the activation's input.
 *   hs (B,T,ldh): state h after the step that read position p.
 *   cs (B,T,U): LSTM cell c; GRU the recurrent candidate part h_prev@U_h+b_rh.
 * A masked (b, p) carries h (and c) over and gets a zero gate gradient, so
 * the GEMMs of backward need no special case. Backward adds into dw, du, db;
 * the input gradient is one GEMM over all steps at the end. The op runs on
 * one BLAS thread (restored after): with several, the per-step GEMMs (B
 * rows) spent more time handing work over than computing, and the op was 3x
 * to 12x slower on a busy 2-core machine (benchmarks/bench_lstm.py).
 * States in and out (bf_rnn_geom h0, c0, dh_last, dc_last, dh0, dc0): step 0
 * reads h0 / c0 as its previous state; backward starts from dh_last / dc_last
 * and leaves the initial states' gradients in dh / dc. */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "act_math.h"
#include "blas_threads.h"
#include "seq_ops.h"

static inline int pos(const bf_rnn_geom *g, int s) { return g->go_backwards ? g->T - 1 - s : s; }

size_t bf_cpu_rnn_workspace_bytes(bf_backend *be, const bf_rnn_geom *g, int backward) {
    (void)be;
    return sizeof(float) * bf_rnn_workspace_floats(g, backward);
}

// out (B,T,ldo) or (B,ldo); hs (B,T,ldh); gates (B,T,G*U); cs (B,T,U); x (B,T,D)
bf_status bf_cpu_rnn_forward(bf_backend *be, const bf_rnn_geom *g, float *out, float *hs, float *gates, float *cs,
                             void *ws, const float *x, const float *w, const float *u, const float *b,
                             const float *mask) {
    (void)be;
    BF_TRY(bf_rnn_check(g));
    const int B = g->B, T = g->T, D = g->D, U = g->U, GU = bf_rnn_gates(g->cell) * U;
    const size_t lz = (size_t)T * GU, lh = (size_t)T * g->ldh, lc = (size_t)T * U;
    float *rec = ws; /* GRU (B,GU): h_prev @ U + b_rec */
    /* input projection of all steps: one GEMM */
    for (size_t r = 0; r < (size_t)B * T; r++) {
        if (b) memcpy(gates + r * GU, b, sizeof(float) * GU);
        else memset(gates + r * GU, 0, sizeof(float) * GU);
    }
    const int nt = bf_blas_one_thread(1);
    bf_sgemm(0, 0, B * T, GU, D, 1.0f, x, D, w, GU, 1.0f, gates, GU);
    for (int s = 0; s < T; s++) {
        const int p = pos(g, s), pp = s > 0 ? pos(g, s - 1) : 0;
        float *z = gates + (size_t)p * GU;
        const float *hp = s > 0 ? hs + (size_t)pp * g->ldh : g->h0;
        const size_t lhp = s > 0 ? lh : (size_t)U; /* rows of h0 are U apart */
        if (g->cell == BF_CELL_GRU) {
            for (int r = 0; r < B; r++) {
                if (b) memcpy(rec + (size_t)r * GU, b + GU, sizeof(float) * GU);
                else memset(rec + (size_t)r * GU, 0, sizeof(float) * GU);
            }
            if (hp) bf_sgemm(0, 0, B, GU, U, 1.0f, hp, (int)lhp, u, GU, 1.0f, rec, GU);
        } else if (hp) {
            bf_sgemm(0, 0, B, GU, U, 1.0f, hp, (int)lhp, u, GU, 1.0f, z, (int)lz);
        }
        for (int r = 0; r < B; r++) {
            float *zr = z + r * lz, *h = hs + r * lh + (size_t)p * g->ldh;
            const float *hpr = hp ? hp + r * lhp : NULL;
            const int on = !mask || mask[(size_t)r * T + p] != 0.0f;
            if (g->cell == BF_CELL_LSTM) {
                float *c = cs + r * lc + (size_t)p * U;
                const float *cp = s > 0 ? cs + r * lc + (size_t)pp * U : g->c0 ? g->c0 + (size_t)r * U : NULL;
                for (int j = 0; j < U; j++) {
                    float i = bf_sigmoidf(zr[j]), f = bf_sigmoidf(zr[U + j]), gg = tanhf(zr[2 * U + j]), o = bf_sigmoidf(zr[3 * U + j]);
                    zr[j] = i; zr[U + j] = f; zr[2 * U + j] = gg; zr[3 * U + j] = o;
                    float cprev = cp ? cp[j] : 0.0f;
                    if (on) {
                        c[j] = f * cprev + i * gg;
                        h[j] = o * tanhf(c[j]);
                    } else {
                        c[j] = cprev;
                        h[j] = hpr ? hpr[j] : 0.0f;
                    }
                }
            } else if (g->cell == BF_CELL_GRU) {
                const float *rr = rec + (size_t)r * GU;
                float *c = cs + r * lc + (size_t)p * U;
                for (int j = 0; j < U; j++) {
                    float zg = bf_sigmoidf(zr[j] + rr[j]), re = bf_sigmoidf(zr[U + j] + rr[U + j]);
                    float hh = tanhf(zr[2 * U + j] + re * rr[2 * U + j]);
                    float hprev = hpr ? hpr[j] : 0.0f;
                    zr[j] = zg; zr[U + j] = re; zr[2 * U + j] = hh;
                    c[j] = rr[2 * U + j];
                    h[j] = on ? zg * hprev + (1.0f - zg) * hh : hprev;
                }
            } else {
                for (int j = 0; j < U; j++) h[j] = on ? bf_cell_act(g->act, zr[j]) : hpr ? hpr[j] : 0.0f;
            }
            if (out == hs) continue;
            float *o = NULL;
            if (g->return_sequences) o = out + ((size_t)r * T + (g->reverse_out ? T - 1 - s : s)) * g->ldo;
            else if (s == T - 1) o = out + (size_t)r * g->ldo;
            if (!o) continue;
            if (g->zero_masked && !on) memset(o, 0, sizeof(float) * U);
            else memcpy(o, h, sizeof(float) * U);
        }
    }
    bf_blas_threads_back(nt);
    return BF_OK;
}

// from dout (as out of forward): dx (B,T,D); dw (D,GU), du (U,GU), db (GU or 2*GU) added into
bf_status bf_cpu_rnn_backward(bf_backend *be, const bf_rnn_geom *g, float *dx, float *dw, float *du, float *db,
                              float *gates, void *ws, const float *dout, const float *hs, const float *cs,
                              const float *x, const float *w, const float *u, const float *mask, int dx_add) {
    (void)be;
    BF_TRY(bf_rnn_check(g));
    const int B = g->B, T = g->T, D = g->D, U = g->U, GU = bf_rnn_gates(g->cell) * U;
    const size_t lz = (size_t)T * GU, lh = (size_t)T * g->ldh, lc = (size_t)T * U;
    float *dh = ws, *dhn = dh + (size_t)B * U, *dc = dhn + (size_t)B * U, *dcn = dc + (size_t)B * U;
    float *drec = dcn + (size_t)B * U; /* GRU (B,GU) */
    memset(dh, 0, sizeof(float) * (size_t)B * U * 2);
    memset(dc, 0, sizeof(float) * (size_t)B * U);
    if (g->dh_last) memcpy(dh, g->dh_last, sizeof(float) * (size_t)B * U);
    if (g->dc_last) memcpy(dc, g->dc_last, sizeof(float) * (size_t)B * U);
    const int nt = bf_blas_one_thread(1);
    for (int s = T - 1; s >= 0; s--) {
        const int p = pos(g, s), pp = s > 0 ? pos(g, s - 1) : 0;
        float *z = gates + (size_t)p * GU;
        const float *hp = s > 0 ? hs + (size_t)pp * g->ldh : g->h0;
        const size_t lhp = s > 0 ? lh : (size_t)U; /* rows of h0 are U apart */
        for (int r = 0; r < B; r++) {
            float *zr = z + r * lz, *d = dh + (size_t)r * U, *dn = dhn + (size_t)r * U;
            float *dcr = dc + (size_t)r * U, *dcnr = dcn + (size_t)r * U;
            const int on = !mask || mask[(size_t)r * T + p] != 0.0f;
            const float *o = NULL;
            if (g->return_sequences) o = dout + ((size_t)r * T + (g->reverse_out ? T - 1 - s : s)) * g->ldo;
            else if (s == T - 1) o = dout + (size_t)r * g->ldo;
            if (o && !(g->zero_masked && !on))
                for (int j = 0; j < U; j++) d[j] += o[j];
            if (!on) {
                memset(zr, 0, sizeof(float) * GU);
                if (g->cell == BF_CELL_GRU) memset(drec + (size_t)r * GU, 0, sizeof(float) * GU);
                memcpy(dn, d, sizeof(float) * U);
                memcpy(dcnr, dcr, sizeof(float) * U);
                continue;
            }
            const float *hpr = hp ? hp + r * lhp : NULL;
            if (g->cell == BF_CELL_LSTM) {
                const float *c = cs + r * lc + (size_t)p * U;
                const float *cp = s > 0 ? cs + r * lc + (size_t)pp * U : g->c0 ? g->c0 + (size_t)r * U : NULL;
                for (int j = 0; j < U; j++) {
                    float i = zr[j], f = zr[U + j], gg = zr[2 * U + j], oo = zr[3 * U + j];
                    float tc = tanhf(c[j]), dcc = dcr[j] + d[j] * oo * (1.0f - tc * tc);
                    float cprev = cp ? cp[j] : 0.0f;
                    zr[j] = dcc * gg * i * (1.0f - i);
                    zr[U + j] = dcc * cprev * f * (1.0f - f);
                    zr[2 * U + j] = dcc * i * (1.0f - gg * gg);
                    zr[3 * U + j] = d[j] * tc * oo * (1.0f - oo);
                    dcnr[j] = dcc * f;
                    dn[j] = 0.0f;
                }
            } else if (g->cell == BF_CELL_GRU) {
                const float *rh = cs + r * lc + (size_t)p * U;
                float *dr = drec + (size_t)r * GU;
                for (int j = 0; j < U; j++) {
                    float zg = zr[j], re = zr[U + j], hh = zr[2 * U + j], hprev = hpr ? hpr[j] : 0.0f;
                    float dz = d[j] * (hprev - hh) * zg * (1.0f - zg);
                    float dhh = d[j] * (1.0f - zg) * (1.0f - hh * hh);
                    float drr = dhh * rh[j] * re * (1.0f - re);
                    zr[j] = dz; zr[U + j] = drr; zr[2 * U + j] = dhh;
                    dr[j] = dz; dr[U + j] = drr; dr[2 * U + j] = dhh * re;
                    dn[j] = d[j] * zg;
                }
            } else {
                const float *h = hs + r * lh + (size_t)p * g->ldh;
                for (int j = 0; j < U; j++) {
                    zr[j] = d[j] * bf_cell_act_grad(g->act, h[j]);
                    dn[j] = 0.0f;
                }
            }
        }
        /* through the recurrent kernel: dh_prev += drec @ U^T, du += h_prev^T @ drec */
        const float *dz = g->cell == BF_CELL_GRU ? drec : z;
        const int ldz = g->cell == BF_CELL_GRU ? GU : (int)lz;
        if (g->cell == BF_CELL_GRU && db)
            for (int r = 0; r < B; r++)
                for (int j = 0; j < GU; j++) db[GU + j] += drec[(size_t)r * GU + j];
        if (hp) {
            bf_sgemm(0, 1, B, U, GU, 1.0f, dz, ldz, u, GU, 1.0f, dhn, U);
            if (du) bf_sgemm(1, 0, U, GU, B, 1.0f, hp, (int)lhp, dz, ldz, 1.0f, du, GU);
        }
        float *t = dh; dh = dhn; dhn = t;
        t = dc; dc = dcn; dcn = t;
    }
    if (g->dh0) memcpy(g->dh0, dh, sizeof(float) * (size_t)B * U);
    if (g->dc0) memcpy(g->dc0, dc, sizeof(float) * (size_t)B * U);
    /* the input projection of all steps: one GEMM each for dw and dx */
    if (dw) bf_sgemm(1, 0, D, GU, B * T, 1.0f, x, D, gates, GU, 1.0f, dw, GU);
    if (db)
        for (size_t r = 0; r < (size_t)B * T; r++) {
            const float *zr = gates + r * GU;
            for (int j = 0; j < GU; j++) db[j] += zr[j];
        }
    if (dx) bf_sgemm(0, 1, B * T, D, GU, 1.0f, gates, GU, w, GU, dx_add ? 1.0f : 0.0f, dx, D);
    bf_blas_threads_back(nt);
    return BF_OK;
}
