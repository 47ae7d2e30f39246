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
 * the input gradient is one GEMM over all steps at the end, and so is du (per
 * row) for LSTM / SimpleRNN, whose gate gradients stay in `gates`. Wide
 * LSTM / SimpleRNN layers run their steps in blocks of batch rows, each block
 * one pool task through all the steps (row_blocks; a row's recurrence reads
 * only its own row); the step loops run on one thread or all of them,
 * whichever measures faster (blas_threads.h: threads cost more than they gain
 * when the machine is busy); the all-steps GEMMs keep the threads. The gate math is vectorized (vec_exp.h): scalar expf / tanhf took half the
 * step (benchmarks/bench_lstm.py: 690 -> 1700-1900 samples/s here).
 * States in and out (bf_rnn_geom h0, c0, dh_last, dc_last, dh0, dc0): step 0
 * reads h0 / c0 as its previous state; backward starts from dh_last / dc_last
 * and leaves the initial states' gradients in dh / dc.
 * Dropout (training, bf_rnn_geom nmx / nmh; rnn_dropout.c): x is masked into
 * a workspace copy before the input projection (one GEMM, or one per gate
 * with per-gate masks), h_prev into a (B,U) copy before each step's
 * recurrent GEMM; backward draws the masks again and masks the gradients the
 * same way (LSTM / SimpleRNN du: each row's sum over its steps, then that
 * row's masks, so still one GEMM per row). */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "act_math.h"
#include "blas_threads.h"
#include "par.h"
#include "cpu_ops.h"
#include "rnn_dropout.h"
#include "transpose.h"
#include "vec_exp.h"

static inline int pos(const bf_rnn_geom *g, int s) { return g->go_backwards ? g->T - 1 - s : s; }

/* The cells' row loops, vectorized (vec_exp.h) and also built for AVX2; the
 * cell activation `act` and the gates' `ract` are Keras's activation and
 * recurrent_activation (tanh and sigmoid by default, the fast path). */
#define CELL_CLONES __attribute__((target_clones("avx2", "default")))

// z (n) = a(z) in place
static inline void act_rows(bf_act a, float *restrict z, int n) {
    if (a == BF_ACT_SIGMOID)
        for (int j = 0; j < n; j++) z[j] = bf_vsigmoid(z[j]);
    else if (a == BF_ACT_TANH)
        for (int j = 0; j < n; j++) z[j] = bf_vtanh(z[j]);
    else
        for (int j = 0; j < n; j++) z[j] = bf_cell_act(a, z[j]);
}

// one LSTM row: z (4U) pre-activations i,f,c,o -> activations in place; c, h (U) from cp (U or NULL)
CELL_CLONES static void lstm_row(float *restrict z, float *restrict c, const float *restrict cp, float *restrict h,
                                 int U, bf_act act, bf_act ract) {
    act_rows(ract, z, 2 * U);
    act_rows(act, z + 2 * U, U);
    act_rows(ract, z + 3 * U, U);
    if (cp)
        for (int j = 0; j < U; j++) c[j] = z[U + j] * cp[j] + z[j] * z[2 * U + j];
    else
        for (int j = 0; j < U; j++) c[j] = z[j] * z[2 * U + j];
    if (act == BF_ACT_TANH) {
        for (int j = 0; j < U; j++) h[j] = z[3 * U + j] * bf_vtanh(c[j]);
    } else {
        for (int j = 0; j < U; j++) h[j] = c[j];
        act_rows(act, h, U);
        for (int j = 0; j < U; j++) h[j] *= z[3 * U + j];
    }
}

// one GRU row: z (3U) input parts z,r,hh + rr (3U) recurrent parts -> activations in place; c (U) = rr's hh part
CELL_CLONES static void gru_row(float *restrict z, const float *restrict rr, float *restrict c,
                                const float *restrict hp, float *restrict h, int U, bf_act act, bf_act ract) {
    for (int j = 0; j < 2 * U; j++) z[j] += rr[j];
    act_rows(ract, z, 2 * U);
    for (int j = 0; j < U; j++) {
        z[2 * U + j] += z[U + j] * rr[2 * U + j];
        c[j] = rr[2 * U + j];
    }
    act_rows(act, z + 2 * U, U);
    if (hp)
        for (int j = 0; j < U; j++) h[j] = z[j] * hp[j] + (1.0f - z[j]) * z[2 * U + j];
    else
        for (int j = 0; j < U; j++) h[j] = (1.0f - z[j]) * z[2 * U + j];
}

// one SimpleRNN row: h (U) = act(z (U))
CELL_CLONES static void simple_row(bf_act act, const float *restrict z, float *restrict h, int U) {
    for (int j = 0; j < U; j++) h[j] = z[j];
    act_rows(act, h, U);
}

// one LSTM row back: z (4U) activations -> pre-activation gradients in place; d (U) dh, dcr (U) dc in,
// dcn (U) dc to the step before; dn (U) zeroed (used for act(c) on the way)
CELL_CLONES static void lstm_row_back(float *restrict z, const float *restrict c, const float *restrict cp,
                                      const float *restrict d, const float *restrict dcr, float *restrict dcn,
                                      float *restrict dn, int U, bf_act act, bf_act ract) {
    for (int j = 0; j < U; j++) dn[j] = c[j];
    act_rows(act, dn, U);
    if (act != BF_ACT_TANH || ract != BF_ACT_SIGMOID) { /* any pair: the derivatives from the outputs */
        for (int j = 0; j < U; j++) {
            const float i = z[j], f = z[U + j], gg = z[2 * U + j], oo = z[3 * U + j], tc = dn[j];
            const float dcc = dcr[j] + d[j] * oo * bf_cell_act_grad(act, tc), cprev = cp ? cp[j] : 0.0f;
            z[j] = dcc * gg * bf_cell_act_grad(ract, i);
            z[U + j] = dcc * cprev * bf_cell_act_grad(ract, f);
            z[2 * U + j] = dcc * i * bf_cell_act_grad(act, gg);
            z[3 * U + j] = d[j] * tc * bf_cell_act_grad(ract, oo);
            dcn[j] = dcc * f;
            dn[j] = 0.0f;
        }
        return;
    }
    for (int j = 0; j < U; j++) {
        const float i = z[j], f = z[U + j], gg = z[2 * U + j], oo = z[3 * U + j], tc = dn[j];
        const float dcc = dcr[j] + d[j] * oo * (1.0f - tc * tc), cprev = cp ? cp[j] : 0.0f;
        z[j] = dcc * gg * i * (1.0f - i);
        z[U + j] = dcc * cprev * f * (1.0f - f);
        z[2 * U + j] = dcc * i * (1.0f - gg * gg);
        z[3 * U + j] = d[j] * tc * oo * (1.0f - oo);
        dcn[j] = dcc * f;
        dn[j] = 0.0f;
    }
}

/* rows [r0, r1) of dst (B rows, ldd apart) += h_prev (B rows, lhp apart) @ u (U,GU), through the state
 * masks when there are (each mask's h_prev rows into the same rows of hm) */
static void rec_gemm(const bf_rnn_geom *g, const bf_rnn_drop_ws *dp, const float *hp, size_t lhp, const float *u,
                     float *dst, size_t ldd, int r0, int r1) {
    const int B = g->B, U = g->U, GU = bf_rnn_gates(g->cell) * U, R = r1 - r0;
    hp += r0 * lhp, dst += r0 * ldd;
    if (!g->nmh) {
        bf_sgemm(0, 0, R, GU, U, 1.0f, hp, (int)lhp, u, GU, 1.0f, dst, (int)ldd);
        return;
    }
    const int W = GU / g->nmh;
    for (int k = 0; k < g->nmh; k++) {
        float *hm = dp->hm + (size_t)r0 * U;
        bf_cpu_rnn_mask_rows(hm, hp, (long)lhp, dp->mh + ((size_t)k * B + r0) * U, R, 1, U, 0);
        bf_sgemm(0, 0, R, W, U, 1.0f, hm, U, u + (size_t)k * W, GU, 1.0f, dst + (size_t)k * W, (int)ldd);
    }
}

/* One time step of the forward over batch rows [r0, r1): with `gemm`, first
 * z += h_prev @ u for those rows (LSTM / SimpleRNN, whose steps are
 * independent row by row), then the cells' math. */
typedef struct {
    const bf_rnn_geom *g;
    float *out, *hs, *z, *cs, *rec;
    const float *mask, *u, *hp;
    int s, p, pp;
    size_t lz, lh, lc, lhp;
    int nb;
    const bf_rnn_drop_ws *dp;
} fwd_step;

static void fwd_rows(const fwd_step *f, int r0, int r1, int gemm) {
    const bf_rnn_geom *g = f->g;
    const int T = g->T, U = g->U, GU = bf_rnn_gates(g->cell) * U, s = f->s, p = f->p, pp = f->pp;
    const size_t lz = f->lz, lh = f->lh, lc = f->lc, lhp = f->lhp;
    if (gemm && f->hp) rec_gemm(g, f->dp, f->hp, lhp, f->u, f->z, lz, r0, r1);
    for (int r = r0; r < r1; r++) {
        float *zr = f->z + r * lz, *h = f->hs + r * lh + (size_t)p * g->ldh, *cs = f->cs;
        const float *hpr = f->hp ? f->hp + r * lhp : NULL;
        const int on = !f->mask || f->mask[(size_t)r * T + p] != 0.0f;
        if (g->cell == BF_CELL_LSTM) {
            float *c = cs + r * lc + (size_t)p * U;
            const float *cp = s > 0 ? cs + r * lc + (size_t)pp * U : g->c0 ? g->c0 + (size_t)r * U : NULL;
            lstm_row(zr, c, cp, h, U, g->act, g->ract);
            if (!on) { /* carried over */
                if (cp) memcpy(c, cp, sizeof(float) * U);
                else memset(c, 0, sizeof(float) * U);
            }
        } else if (g->cell == BF_CELL_GRU) {
            gru_row(zr, f->rec + (size_t)r * GU, cs + r * lc + (size_t)p * U, hpr, h, U, g->act, g->ract);
        } else {
            simple_row(g->act, zr, h, U);
        }
        if (!on) {
            if (hpr) memcpy(h, hpr, sizeof(float) * U);
            else memset(h, 0, sizeof(float) * U);
        }
        if (f->out == f->hs) continue;
        float *o = NULL;
        if (g->return_sequences) o = f->out + ((size_t)r * T + (g->reverse_out ? T - 1 - s : s)) * g->ldo;
        else if (s == T - 1) o = f->out + (size_t)r * g->ldo;
        if (!o) continue;
        if (g->zero_masked && !on) memset(o, 0, sizeof(float) * U);
        else memcpy(o, h, sizeof(float) * U);
    }
}

/* row blocks, each one pool task through all the steps (a row's recurrence
 * reads only its own row, state masks included): fixed by the shape (never by
 * the threads, so the bits are the same on any number of threads); 1 for the
 * GRU (its du is a sum over rows at every step) and for small steps */
#define ROW_BLOCK 32
static int row_blocks(const bf_rnn_geom *g) {
    const double work = (double)g->B * bf_rnn_gates(g->cell) * g->U * g->U;
    if (g->cell == BF_CELL_GRU || g->B < 2 * ROW_BLOCK || work < (double)(1 << 21)) return 1;
    return (g->B + ROW_BLOCK - 1) / ROW_BLOCK;
}

static void block_rows(int B, int nb, long t, int *r0, int *r1) {
    *r0 = (int)((long)B * t / nb);
    *r1 = (int)((long)B * (t + 1) / nb);
}

/* step s's position p (and pp, the previous step's), gates z (from those of
 * position 0) and previous state hp, rows lhp apart (h0's are U apart) */
static void step_at(const bf_rnn_geom *g, int s, float *gates, const float *hs, size_t lh, int *p, int *pp, float **z,
                    const float **hp, size_t *lhp) {
    *p = pos(g, s), *pp = s > 0 ? pos(g, s - 1) : 0;
    *z = gates + (size_t)*p * bf_rnn_gates(g->cell) * g->U;
    *hp = s > 0 ? hs + (size_t)*pp * g->ldh : g->h0;
    *lhp = s > 0 ? lh : (size_t)g->U;
}

/* step s of a run whose step-independent fields are in *f (its z: the gates of position 0) */
static fwd_step fwd_at(const fwd_step *f, int s) {
    fwd_step t = *f;
    t.s = s;
    step_at(f->g, s, f->z, f->hs, f->lh, &t.p, &t.pp, &t.z, &t.hp, &t.lhp);
    return t;
}

/* one block of rows through every step: the rows' recurrences are independent */
static void fwd_task(void *ctx, long t, int slot) {
    (void)slot;
    const fwd_step *f = ctx;
    int r0, r1;
    block_rows(f->g->B, f->nb, t, &r0, &r1);
    for (int s = 0; s < f->g->T; s++) {
        const fwd_step st = fwd_at(f, s);
        fwd_rows(&st, r0, r1, 1);
    }
}

/* this direction's dropout masks into the workspace (forward and backward draw the same) */
static void draw_masks(const bf_rnn_geom *g, const bf_rnn_drop_ws *dp) {
    if (g->nmx) bf_cpu_rnn_masks(dp->mx, g->nmx, g->B, g->D, g->rate_x, g->seed_x);
    if (g->nmh) bf_cpu_rnn_masks(dp->mh, g->nmh, g->B, g->U, g->rate_h, g->seed_h);
}

/* the shared workspace, then for a backward in row blocks u^T (GU,U) */
size_t bf_cpu_rnn_workspace_bytes(bf_backend *be, const bf_rnn_geom *g, int backward) {
    (void)be;
    const size_t ut = backward && row_blocks(g) > 1 ? (size_t)bf_rnn_gates(g->cell) * g->U * g->U : 0;
    return sizeof(float) * (bf_rnn_workspace_floats(g, backward) + ut);
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
    bf_rnn_drop_ws dp;
    bf_rnn_drop_carve(g, ws, 0, &dp);
    draw_masks(g, &dp);
    /* input projection of all steps: one GEMM (per mask of x) */
    for (size_t r = 0; r < (size_t)B * T; r++) {
        if (b) memcpy(gates + r * GU, b, sizeof(float) * GU);
        else memset(gates + r * GU, 0, sizeof(float) * GU);
    }
    if (!g->nmx) bf_sgemm(0, 0, B * T, GU, D, 1.0f, x, D, w, GU, 1.0f, gates, GU);
    for (int k = 0, W = g->nmx ? GU / g->nmx : 0; k < g->nmx; k++) {
        bf_cpu_rnn_mask_rows(dp.xm, x, D, dp.mx + (size_t)k * B * D, B, T, D, 0);
        bf_sgemm(0, 0, B * T, W, D, 1.0f, dp.xm, D, w + (size_t)k * W, GU, 1.0f, gates + (size_t)k * W, GU);
    }
    static bf_blas_tune tune;
    bf_tune_run tr = bf_tune_begin(&tune);
    const int nb = row_blocks(g), threads = tr.mode ? bf_par_threads() : 1;
    fwd_step run = {g, out, hs, gates, cs, rec, mask, u, NULL, 0, 0, 0, lz, lh, lc, 0, nb, &dp};
    if (nb > 1) bf_par_for(nb, threads, fwd_task, &run);
    for (int s = 0; s < T && nb == 1; s++) {
        fwd_step f = fwd_at(&run, s);
        if (g->cell == BF_CELL_GRU) {
            for (int r = 0; r < B; r++) {
                if (b) memcpy(rec + (size_t)r * GU, b + GU, sizeof(float) * GU);
                else memset(rec + (size_t)r * GU, 0, sizeof(float) * GU);
            }
            if (f.hp) rec_gemm(g, &dp, f.hp, f.lhp, u, rec, GU, 0, B);
        } else if (f.hp) {
            rec_gemm(g, &dp, f.hp, f.lhp, u, f.z, lz, 0, B);
        }
        fwd_rows(&f, 0, B, 0);
    }
    bf_tune_end(&tr, (double)B * T * GU * U);
    return BF_OK;
}

/* One time step of the backward over batch rows [r0, r1): the cells' math
 * into the gate gradients z and dh_prev / dc_prev, then with `gemm`
 * dh_prev += dz @ u^T for those rows, through the state masks (LSTM / SimpleRNN). */
typedef struct {
    const bf_rnn_geom *g;
    float *z, *dh, *dhn, *dc, *dcn, *drec;
    const float *dout, *hs, *cs, *mask, *hp;
    int s, p, pp;
    size_t lz, lh, lc, lhp;
    int nb;
    const float *ut; /* u^T (GU,U): in blocks, dh_prev's product runs as NN (a quarter faster than NT) */
    const bf_rnn_drop_ws *dp;
} bwd_step;

static void bwd_rows(const bwd_step *bs, int r0, int r1, int gemm) {
    const bf_rnn_geom *g = bs->g;
    const int T = g->T, U = g->U, GU = bf_rnn_gates(g->cell) * U, s = bs->s, p = bs->p, pp = bs->pp;
    const size_t lz = bs->lz, lh = bs->lh, lc = bs->lc, lhp = bs->lhp;
    float *z = bs->z, *dh = bs->dh, *dhn = bs->dhn, *dc = bs->dc, *dcn = bs->dcn, *drec = bs->drec;
    const float *dout = bs->dout, *hs = bs->hs, *cs = bs->cs, *mask = bs->mask, *hp = bs->hp;
    for (int r = r0; r < r1; r++) {
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
            lstm_row_back(zr, c, cp, d, dcr, dcnr, dn, U, g->act, g->ract);
        } else if (g->cell == BF_CELL_GRU) {
            const float *rh = cs + r * lc + (size_t)p * U;
            float *dr = drec + (size_t)r * GU;
            for (int j = 0; j < U; j++) {
                float zg = zr[j], re = zr[U + j], hh = zr[2 * U + j], hprev = hpr ? hpr[j] : 0.0f;
                float dz = d[j] * (hprev - hh) * bf_cell_act_grad(g->ract, zg);
                float dhh = d[j] * (1.0f - zg) * bf_cell_act_grad(g->act, hh);
                float drr = dhh * rh[j] * bf_cell_act_grad(g->ract, re);
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
    if (!gemm || !hp) return;
    const int R = r1 - r0, nmh = g->nmh, W = GU / (nmh ? nmh : 1);
    if (!nmh) bf_sgemm(0, 0, R, U, GU, 1.0f, z + r0 * lz, (int)lz, bs->ut, U, 1.0f, dhn + (size_t)r0 * U, U);
    for (int k = 0; k < nmh; k++) { /* dh_prev += (dz_k @ u_k^T) * mask_k, in the same rows of dt */
        float *dt = bs->dp->dt + (size_t)r0 * U;
        bf_sgemm(0, 0, R, U, W, 1.0f, z + r0 * lz + (size_t)k * W, (int)lz, bs->ut + (size_t)k * W * U, U, 0.0f, dt, U);
        bf_cpu_rnn_mask_rows(dhn + (size_t)r0 * U, dt, U, bs->dp->mh + ((size_t)k * g->B + r0) * U, R, 1, U, 1);
    }
}

/* step s of a backward whose step-independent fields are in *bs (its z: the gates of position 0) */
static bwd_step bwd_at(const bwd_step *bs, int s) {
    bwd_step t = *bs;
    t.s = s;
    step_at(bs->g, s, bs->z, bs->hs, bs->lh, &t.p, &t.pp, &t.z, &t.hp, &t.lhp);
    return t;
}

/* one block of rows back through every step, swapping its own rows' dh / dc
 * buffers as the serial loop does (the caller swaps once more when T is odd) */
static void bwd_task(void *ctx, long t, int slot) {
    (void)slot;
    bwd_step b = *(const bwd_step *)ctx;
    int r0, r1;
    block_rows(b.g->B, b.nb, t, &r0, &r1);
    for (int s = b.g->T - 1; s >= 0; s--) {
        const bwd_step st = bwd_at(&b, s);
        bwd_rows(&st, r0, r1, 1);
        float *q = b.dh; b.dh = b.dhn; b.dhn = q;
        q = b.dc; b.dc = b.dcn; b.dcn = q;
    }
}

/* du (U,GU) += sum over rows r of h1_r^T (U,T-1) @ dz1_r (T-1,GU), the rows in
 * order, the columns in gate blocks of U: one pool task each. The blocks are
 * fixed by the shape, not the threads, so the bits are the same on any
 * number of threads (one-thread OpenBLAS takes another kernel for a narrower
 * product, so gemm.c would not split these). */
typedef struct {
    const bf_rnn_geom *g;
    const float *hs, *gates;
    float *du;
    size_t lh, lz;
} du_job;

static void du_block(void *ctx, long k, int slot) {
    (void)slot;
    const du_job *j = ctx;
    const bf_rnn_geom *g = j->g;
    const int U = g->U, GU = bf_rnn_gates(g->cell) * U;
    for (int r = 0; r < g->B; r++) {
        const float *h1 = j->hs + r * j->lh + (g->go_backwards ? g->ldh : 0);
        const float *z1 = j->gates + r * j->lz + (g->go_backwards ? 0 : GU);
        bf_sgemm(1, 0, U, U, g->T - 1, 1.0f, h1, g->ldh, z1 + (size_t)k * U, GU, 1.0f, j->du + (size_t)k * U, GU);
    }
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
    bf_rnn_drop_ws dp;
    bf_rnn_drop_carve(g, ws, 1, &dp);
    draw_masks(g, &dp);
    memset(dh, 0, sizeof(float) * (size_t)B * U * 2);
    memset(dc, 0, sizeof(float) * (size_t)B * U);
    if (g->dh_last) memcpy(dh, g->dh_last, sizeof(float) * (size_t)B * U);
    if (g->dc_last) memcpy(dc, g->dc_last, sizeof(float) * (size_t)B * U);
    static bf_blas_tune tune;
    bf_tune_run tr = bf_tune_begin(&tune);
    const int nb = row_blocks(g), threads = tr.mode ? bf_par_threads() : 1;
    if (nb > 1) {
        float *ut = (float *)ws + bf_rnn_workspace_floats(g, 1);
        bf_transpose(ut, u, U, GU, GU);
        bwd_step run = {g, gates, dh, dhn, dc, dcn, drec, dout, hs, cs, mask, NULL, 0, 0, 0, lz, lh, lc, 0, nb, ut, &dp};
        bf_par_for(nb, threads, bwd_task, &run);
        if (T % 2) {
            float *t = dh; dh = dhn; dhn = t;
            t = dc; dc = dcn; dcn = t;
        }
        for (int k = 0, W = GU / (g->nmh ? g->nmh : 1); du && g->h0 && k < g->nmh; k++) { /* step 0's du, as below */
            const float *dz0 = gates + (size_t)pos(g, 0) * GU + (size_t)k * W;
            bf_cpu_rnn_mask_rows(dp.hm, g->h0, U, dp.mh + (size_t)k * B * U, B, 1, U, 0);
            bf_sgemm(1, 0, U, W, B, 1.0f, dp.hm, U, dz0, (int)lz, 1.0f, du + (size_t)k * W, GU);
        }
    }
    for (int s = T - 1; s >= 0 && nb == 1; s--) {
        const bwd_step run = {g, gates, dh, dhn, dc, dcn, drec, dout, hs, cs, mask, NULL, 0, 0, 0, lz, lh, lc, 0, nb, NULL, &dp};
        const bwd_step bs = bwd_at(&run, s);
        float *z = bs.z;
        const float *hp = bs.hp;
        const size_t lhp = bs.lhp;
        bwd_rows(&bs, 0, B, 0);
        /* through the recurrent kernel: dh_prev += drec @ U^T (and for the GRU, whose
         * recurrent gradient drec is not kept, du += h_prev^T @ drec) */
        const float *dz = g->cell == BF_CELL_GRU ? drec : z;
        const int ldz = g->cell == BF_CELL_GRU ? GU : (int)lz;
        if (g->cell == BF_CELL_GRU && db)
            for (int r = 0; r < B; r++)
                for (int j = 0; j < GU; j++) db[GU + j] += drec[(size_t)r * GU + j];
        if (hp && !g->nmh) {
            bf_sgemm(0, 1, B, U, GU, 1.0f, dz, ldz, u, GU, 1.0f, dhn, U);
            if (du && g->cell == BF_CELL_GRU) bf_sgemm(1, 0, U, GU, B, 1.0f, hp, (int)lhp, dz, ldz, 1.0f, du, GU);
        }
        for (int k = 0, W = GU / (g->nmh ? g->nmh : 1); hp && k < g->nmh; k++) { /* through the state masks */
            const float *mk = dp.mh + (size_t)k * B * U;
            bf_sgemm(0, 1, B, U, W, 1.0f, dz + (size_t)k * W, ldz, u + (size_t)k * W, GU, 0.0f, dp.dt, U);
            bf_cpu_rnn_mask_rows(dhn, dp.dt, U, mk, B, 1, U, 1);
            if (!du || (g->cell != BF_CELL_GRU && s > 0)) continue; /* LSTM / SimpleRNN: per row below */
            bf_cpu_rnn_mask_rows(dp.hm, hp, (long)lhp, mk, B, 1, U, 0);
            bf_sgemm(1, 0, U, W, B, 1.0f, dp.hm, U, dz + (size_t)k * W, ldz, 1.0f, du + (size_t)k * W, GU);
        }
        float *t = dh; dh = dhn; dhn = t;
        t = dc; dc = dcn; dcn = t;
    }
    bf_tune_end(&tr, (double)B * T * GU * U);
    if (g->dh0) memcpy(g->dh0, dh, sizeof(float) * (size_t)B * U);
    if (g->dc0) memcpy(g->dc0, dc, sizeof(float) * (size_t)B * U);
    /* LSTM / SimpleRNN keep every step's gate gradient in gates, so du is one
     * GEMM per row over its T-1 steps: du += sum_p h(prev of p)^T @ dz(p),
     * plus h0^T @ dz of step 0 when there is an initial state */
    /* with state masks: each row's sum, then its masks on its rows (mask k, row i scales du[i, gate k]) */
    for (int r = 0; du && g->nmh && g->cell != BF_CELL_GRU && r < B && T > 1; r++) {
        const float *h1 = hs + r * lh + (g->go_backwards ? g->ldh : 0), *z1 = gates + r * lz + (g->go_backwards ? 0 : GU);
        bf_sgemm(1, 0, U, GU, T - 1, 1.0f, h1, g->ldh, z1, GU, 0.0f, dp.dut, GU);
        for (int k = 0, W = GU / g->nmh; k < g->nmh; k++) {
            const float *mr = dp.mh + ((size_t)k * B + r) * U;
            for (int i = 0; i < U; i++) {
                float *o = du + (size_t)i * GU + (size_t)k * W;
                const float *t = dp.dut + (size_t)i * GU + (size_t)k * W;
                const float mi = mr[i];
                for (int j = 0; j < W; j++) o[j] += mi * t[j];
            }
        }
    }
    if (du && g->cell != BF_CELL_GRU && !g->nmh) {
        du_job j = {g, hs, gates, du, lh, lz};
        if (T > 1) bf_par_for(GU / U, bf_par_threads(), du_block, &j);
        if (g->h0) bf_sgemm(1, 0, U, GU, B, 1.0f, g->h0, U, gates + (size_t)pos(g, 0) * GU, (int)lz, 1.0f, du, GU);
    }
    /* the input projection of all steps: one GEMM each for dw and dx */
    if (dw && !g->nmx) bf_sgemm(1, 0, D, GU, B * T, 1.0f, x, D, gates, GU, 1.0f, dw, GU);
    if (db)
        for (size_t r = 0; r < (size_t)B * T; r++) {
            const float *zr = gates + r * GU;
            for (int j = 0; j < GU; j++) db[j] += zr[j];
        }
    if (dx && !g->nmx) bf_sgemm(0, 1, B * T, D, GU, 1.0f, gates, GU, w, GU, dx_add ? 1.0f : 0.0f, dx, D);
    /* through the input masks: per mask, dw from the masked x, then dx (+)= (dz @ w^T) * mask in its place */
    for (int k = 0, W = g->nmx ? GU / g->nmx : 0; k < g->nmx; k++) {
        const float *mk = dp.mx + (size_t)k * B * D;
        if (dw) {
            bf_cpu_rnn_mask_rows(dp.xm, x, D, mk, B, T, D, 0);
            bf_sgemm(1, 0, D, W, B * T, 1.0f, dp.xm, D, gates + (size_t)k * W, GU, 1.0f, dw + (size_t)k * W, GU);
        }
        if (!dx) continue;
        bf_sgemm(0, 1, B * T, D, W, 1.0f, gates + (size_t)k * W, GU, w + (size_t)k * W, GU, 0.0f, dp.xm, D);
        bf_cpu_rnn_mask_rows(dx, dp.xm, D, mk, B, T, D, dx_add || k > 0);
    }
    return BF_OK;
}
