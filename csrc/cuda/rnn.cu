/* rnn.cu - one direction of SimpleRNN / LSTM / GRU on the GPU, the layouts
 * and order of work of csrc/cpu/rnn.c: the input projection of all steps is
 * one cuBLAS GEMM (B*T rows), each step one GEMM with the recurrent kernel
 * (rows strided by T) and one elementwise kernel (a thread per (row, unit)).
 * Backward: per step one elementwise kernel and two GEMMs (dh_prev, du), then
 * one GEMM each for dw and dx over all steps. Exact FP32 (no TF32).
 * Initial states and state gradients (bf_rnn_geom h0 ... dc0) as on the CPU.
 * Dropout as on the CPU (rnn_dropout.cu draws the same masks): a masked copy
 * of x per input mask before the input projection, of h_prev per state mask
 * before each recurrent GEMM; backward masks the gradients the same way. */
#include <math.h>

#include "cuda_rnn_dropout.h"
#include "act_math.h"

/* row-major C (M,N) = alpha op(A) op(B) + beta C, as column-major C^T = op(B)^T op(A)^T */
static bf_status gemm(bf_cuda_state *st, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
    BF_TRY(bf_cuda_gemm(st, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                                    alpha, B, ldb, A, lda, beta, C, ldc));
    return BF_OK;
}


/* dst (B rows, ldd apart) += h_prev (B rows, lhp apart) @ u (U,GU), through the state masks when there are */
static bf_status rec_gemm(bf_cuda_state *st, const bf_rnn_geom *g, const bf_rnn_drop_ws *dp, const float *hp, int lhp,
                          const float *u, float *dst, int ldd) {
    const int B = g->B, U = g->U, GU = bf_rnn_gates(g->cell) * U;
    if (!g->nmh) return gemm(st, 0, 0, B, GU, U, 1.0f, hp, lhp, u, GU, 1.0f, dst, ldd);
    const int W = GU / g->nmh;
    for (int k = 0; k < g->nmh; k++) {
        BF_TRY(bf_cuda_rnn_mask_rows(st, dp->hm, hp, lhp, dp->mh + (size_t)k * B * U, B, 1, U, 0));
        BF_TRY(gemm(st, 0, 0, B, W, U, 1.0f, dp->hm, U, u + (size_t)k * W, GU, 1.0f, dst + (size_t)k * W, ldd));
    }
    return BF_OK;
}

/* this direction's dropout masks into the workspace (forward and backward draw the same) */
static bf_status draw_masks(bf_cuda_state *st, const bf_rnn_geom *g, const bf_rnn_drop_ws *dp) {
    if (g->nmx) BF_TRY(bf_cuda_rnn_masks(st, dp->mx, g->nmx, g->B, g->D, g->rate_x, g->seed_x));
    if (g->nmh) BF_TRY(bf_cuda_rnn_masks(st, dp->mh, g->nmh, g->B, g->U, g->rate_h, g->seed_h));
    return BF_OK;
}

__device__ __forceinline__ int pos(const bf_rnn_geom &g, int s) { return g.go_backwards ? g.T - 1 - s : s; }

// out (rows,C) = b (C) broadcast, or 0
__global__ void rnn_fill_rows_kernel(float *out, const float *b, long rows, int C) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < rows * C; e += (long)gridDim.x * blockDim.x)
        out[e] = b ? b[e % C] : 0.0f;
}

// step s of forward: gates (B,T,GU) at position p activated in place, hs / cs / out written; thread per (b, j < U)
__global__ void rnn_step_forward_kernel(bf_rnn_geom g, int s, float *out, float *hs, float *gates, float *cs,
                                        const float *rec, const float *mask) {
    const int U = g.U, T = g.T, GU = (g.cell == BF_CELL_LSTM ? 4 : g.cell == BF_CELL_GRU ? 3 : 1) * U;
    const int p = pos(g, s), pp = s > 0 ? pos(g, s - 1) : 0;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < (long)g.B * U; e += (long)gridDim.x * blockDim.x) {
        const long r = e / U;
        const int j = (int)(e % U);
        float *zr = gates + ((size_t)r * T + p) * GU, *h = hs + ((size_t)r * T + p) * g.ldh;
        const float hprev = s > 0 ? hs[((size_t)r * T + pp) * g.ldh + j] : g.h0 ? g.h0[e] : 0.0f;
        const int on = !mask || mask[(size_t)r * T + p] != 0.0f;
        float hv;
        if (g.cell == BF_CELL_LSTM) {
            float i = bf_cell_act(g.ract, zr[j]), f = bf_cell_act(g.ract, zr[U + j]), gg = bf_cell_act(g.act, zr[2 * U + j]);
            float o = bf_cell_act(g.ract, zr[3 * U + j]);
            zr[j] = i; zr[U + j] = f; zr[2 * U + j] = gg; zr[3 * U + j] = o;
            const float cprev = s > 0 ? cs[((size_t)r * T + pp) * U + j] : g.c0 ? g.c0[e] : 0.0f;
            const float c = on ? f * cprev + i * gg : cprev;
            cs[((size_t)r * T + p) * U + j] = c;
            hv = on ? o * bf_cell_act(g.act, c) : hprev;
        } else if (g.cell == BF_CELL_GRU) {
            const float *rr = rec + (size_t)r * GU;
            float zg = bf_cell_act(g.ract, zr[j] + rr[j]), re = bf_cell_act(g.ract, zr[U + j] + rr[U + j]);
            float hh = bf_cell_act(g.act, zr[2 * U + j] + re * rr[2 * U + j]);
            zr[j] = zg; zr[U + j] = re; zr[2 * U + j] = hh;
            cs[((size_t)r * T + p) * U + j] = rr[2 * U + j];
            hv = on ? zg * hprev + (1.0f - zg) * hh : hprev;
        } else {
            hv = on ? bf_cell_act(g.act, zr[j]) : hprev;
        }
        h[j] = hv;
        if (out == hs) continue;
        float *o = NULL;
        if (g.return_sequences) o = out + ((size_t)r * T + (g.reverse_out ? T - 1 - s : s)) * g.ldo;
        else if (s == T - 1) o = out + (size_t)r * g.ldo;
        if (o) o[j] = g.zero_masked && !on ? 0.0f : hv;
    }
}

// step s of backward: dh (B,U) += dout at s; gates at p become their gradients; drec (GRU), dhn, dcn written
__global__ void rnn_step_backward_kernel(bf_rnn_geom g, int s, float *gates, float *drec, float *dh, float *dhn,
                                         const float *dc, float *dcn, const float *dout, const float *hs,
                                         const float *cs, const float *mask) {
    const int U = g.U, T = g.T, GU = (g.cell == BF_CELL_LSTM ? 4 : g.cell == BF_CELL_GRU ? 3 : 1) * U;
    const int p = pos(g, s), pp = s > 0 ? pos(g, s - 1) : 0;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < (long)g.B * U; e += (long)gridDim.x * blockDim.x) {
        const long r = e / U;
        const int j = (int)(e % U);
        float *zr = gates + ((size_t)r * T + p) * GU;
        const int on = !mask || mask[(size_t)r * T + p] != 0.0f;
        const float *o = NULL;
        if (g.return_sequences) o = dout + ((size_t)r * T + (g.reverse_out ? T - 1 - s : s)) * g.ldo;
        else if (s == T - 1) o = dout + (size_t)r * g.ldo;
        float d = dh[e];
        if (o && !(g.zero_masked && !on)) d += o[j];
        if (!on) {
            for (int k = 0; k < GU / U; k++) {
                zr[k * U + j] = 0.0f;
                if (drec) drec[(size_t)r * GU + k * U + j] = 0.0f;
            }
            dhn[e] = d;
            dcn[e] = dc[e];
            continue;
        }
        const float hprev = s > 0 ? hs[((size_t)r * T + pp) * g.ldh + j] : g.h0 ? g.h0[e] : 0.0f;
        if (g.cell == BF_CELL_LSTM) {
            float i = zr[j], f = zr[U + j], gg = zr[2 * U + j], oo = zr[3 * U + j];
            float c = cs[((size_t)r * T + p) * U + j], cprev = s > 0 ? cs[((size_t)r * T + pp) * U + j] : g.c0 ? g.c0[e] : 0.0f;
            float tc = bf_cell_act(g.act, c), dcc = dc[e] + d * oo * bf_cell_act_grad(g.act, tc);
            zr[j] = dcc * gg * bf_cell_act_grad(g.ract, i);
            zr[U + j] = dcc * cprev * bf_cell_act_grad(g.ract, f);
            zr[2 * U + j] = dcc * i * bf_cell_act_grad(g.act, gg);
            zr[3 * U + j] = d * tc * bf_cell_act_grad(g.ract, oo);
            dcn[e] = dcc * f;
            dhn[e] = 0.0f;
        } else if (g.cell == BF_CELL_GRU) {
            float zg = zr[j], re = zr[U + j], hh = zr[2 * U + j], rh = cs[((size_t)r * T + p) * U + j];
            float dz = d * (hprev - hh) * bf_cell_act_grad(g.ract, zg);
            float dhh = d * (1.0f - zg) * bf_cell_act_grad(g.act, hh);
            float drr = dhh * rh * bf_cell_act_grad(g.ract, re);
            zr[j] = dz; zr[U + j] = drr; zr[2 * U + j] = dhh;
            float *dr = drec + (size_t)r * GU;
            dr[j] = dz; dr[U + j] = drr; dr[2 * U + j] = dhh * re;
            dhn[e] = d * zg;
        } else {
            zr[j] = d * bf_cell_act_grad(g.act, hs[((size_t)r * T + p) * g.ldh + j]);
            dhn[e] = 0.0f;
        }
    }
}

size_t bf_cuda_rnn_workspace_bytes(bf_backend *be, const bf_rnn_geom *g, int backward) {
    (void)be;
    return sizeof(float) * bf_rnn_workspace_floats(g, backward);
}

bf_status bf_cuda_rnn_forward(bf_backend *be, const bf_rnn_geom *g, float *out, float *hs, float *gates, float *cs,
                              void *ws, const float *x, const float *w, const float *u, const float *b,
                              const float *mask) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bf_rnn_check(g));
    const int B = g->B, T = g->T, D = g->D, U = g->U, GU = bf_rnn_gates(g->cell) * U;
    const int lz = T * GU, lh = T * g->ldh;
    float *rec = (float *)ws;
    const long BU = (long)B * U;
    bf_rnn_drop_ws dp;
    bf_rnn_drop_carve(g, (float *)ws, 0, &dp);
    BF_TRY(draw_masks(st, g, &dp));
    rnn_fill_rows_kernel<<<bf_cuda_grid((long)B * T * GU, 256), 256, 0, st->stream>>>(gates, b, (long)B * T, GU);
    BF_CUDA_LAUNCHED(st, rnn_fill_rows_kernel);
    if (!g->nmx) BF_TRY(gemm(st, 0, 0, B * T, GU, D, 1.0f, x, D, w, GU, 1.0f, gates, GU));
    for (int k = 0, W = g->nmx ? GU / g->nmx : 0; k < g->nmx; k++) {
        BF_TRY(bf_cuda_rnn_mask_rows(st, dp.xm, x, D, dp.mx + (size_t)k * B * D, B, T, D, 0));
        BF_TRY(gemm(st, 0, 0, B * T, W, D, 1.0f, dp.xm, D, w + (size_t)k * W, GU, 1.0f, gates + (size_t)k * W, GU));
    }
    for (int s = 0; s < T; s++) {
        const int p = g->go_backwards ? T - 1 - s : s, pp = g->go_backwards ? T - s : s - 1;
        const float *hp = s > 0 ? hs + (size_t)pp * g->ldh : g->h0;
        const int lhp = s > 0 ? lh : U; /* rows of h0 are U apart */
        if (g->cell == BF_CELL_GRU) {
            rnn_fill_rows_kernel<<<bf_cuda_grid((long)B * GU, 256), 256, 0, st->stream>>>(rec, b ? b + GU : NULL, B,
                                                                                          GU);
            BF_CUDA_LAUNCHED(st, rnn_fill_rows_kernel);
            if (hp) BF_TRY(rec_gemm(st, g, &dp, hp, lhp, u, rec, GU));
        } else if (hp) {
            BF_TRY(rec_gemm(st, g, &dp, hp, lhp, u, gates + (size_t)p * GU, lz));
        }
        rnn_step_forward_kernel<<<bf_cuda_grid(BU, 256), 256, 0, st->stream>>>(*g, s, out, hs, gates, cs, rec, mask);
        BF_CUDA_LAUNCHED(st, rnn_step_forward_kernel);
    }
    return BF_OK;
}

bf_status bf_cuda_rnn_backward(bf_backend *be, const bf_rnn_geom *g, float *dx, float *dw, float *du, float *db,
                               float *gates, void *ws, const float *dout, const float *hs, const float *cs,
                               const float *x, const float *w, const float *u, const float *mask, int dx_add) {
    BF_CUDA_ENTER(st, be);
    BF_TRY(bf_rnn_check(g));
    const int B = g->B, T = g->T, D = g->D, U = g->U, GU = bf_rnn_gates(g->cell) * U;
    const int lz = T * GU, lh = T * g->ldh;
    const long BU = (long)B * U;
    float *dh = (float *)ws, *dhn = dh + BU, *dc = dhn + BU, *dcn = dc + BU;
    float *drec = g->cell == BF_CELL_GRU ? dcn + BU : NULL;
    bf_rnn_drop_ws dp;
    bf_rnn_drop_carve(g, (float *)ws, 1, &dp);
    BF_TRY(draw_masks(st, g, &dp));
    BF_CUDA_CHECK(st, cudaMemsetAsync(dh, 0, sizeof(float) * (size_t)BU * 3, st->stream));
    const size_t sb = sizeof(float) * (size_t)BU;
    if (g->dh_last) BF_CUDA_CHECK(st, cudaMemcpyAsync(dh, g->dh_last, sb, cudaMemcpyDeviceToDevice, st->stream));
    if (g->dc_last) BF_CUDA_CHECK(st, cudaMemcpyAsync(dc, g->dc_last, sb, cudaMemcpyDeviceToDevice, st->stream));
    for (int s = T - 1; s >= 0; s--) {
        const int p = g->go_backwards ? T - 1 - s : s, pp = g->go_backwards ? T - s : s - 1;
        const float *hp = s > 0 ? hs + (size_t)pp * g->ldh : g->h0;
        const int lhp = s > 0 ? lh : U; /* rows of h0 are U apart */
        rnn_step_backward_kernel<<<bf_cuda_grid(BU, 256), 256, 0, st->stream>>>(*g, s, gates, drec, dh, dhn, dc, dcn,
                                                                                dout, hs, cs, mask);
        BF_CUDA_LAUNCHED(st, rnn_step_backward_kernel);
        const float *dz = drec ? drec : gates + (size_t)p * GU;
        const int ldz = drec ? GU : lz;
        if (drec && db) BF_TRY(bf_cuda_colsum_add(st, db + GU, drec, B, GU));
        if (hp && !g->nmh) {
            BF_TRY(gemm(st, 0, 1, B, U, GU, 1.0f, dz, ldz, u, GU, 1.0f, dhn, U));
            if (du) BF_TRY(gemm(st, 1, 0, U, GU, B, 1.0f, hp, lhp, dz, ldz, 1.0f, du, GU));
        }
        for (int k = 0, W = GU / (g->nmh ? g->nmh : 1); hp && k < g->nmh; k++) { /* through the state masks */
            const float *mk = dp.mh + (size_t)k * B * U;
            BF_TRY(gemm(st, 0, 1, B, U, W, 1.0f, dz + (size_t)k * W, ldz, u + (size_t)k * W, GU, 0.0f, dp.dt, U));
            BF_TRY(bf_cuda_rnn_mask_rows(st, dhn, dp.dt, U, mk, B, 1, U, 1));
            if (!du) continue;
            BF_TRY(bf_cuda_rnn_mask_rows(st, dp.hm, hp, lhp, mk, B, 1, U, 0));
            BF_TRY(gemm(st, 1, 0, U, W, B, 1.0f, dp.hm, U, dz + (size_t)k * W, ldz, 1.0f, du + (size_t)k * W, GU));
        }
        float *t = dh; dh = dhn; dhn = t;
        t = dc; dc = dcn; dcn = t;
    }
    if (g->dh0) BF_CUDA_CHECK(st, cudaMemcpyAsync(g->dh0, dh, sb, cudaMemcpyDeviceToDevice, st->stream));
    if (g->dc0) BF_CUDA_CHECK(st, cudaMemcpyAsync(g->dc0, dc, sb, cudaMemcpyDeviceToDevice, st->stream));
    if (dw && !g->nmx) BF_TRY(gemm(st, 1, 0, D, GU, B * T, 1.0f, x, D, gates, GU, 1.0f, dw, GU));
    if (db) BF_TRY(bf_cuda_colsum_add(st, db, gates, (long)B * T, GU));
    if (dx && !g->nmx) BF_TRY(gemm(st, 0, 1, B * T, D, GU, 1.0f, gates, GU, w, GU, dx_add ? 1.0f : 0.0f, dx, D));
    /* through the input masks: per mask, dw from the masked x, then dx (+)= (dz @ w^T) * mask in its place */
    for (int k = 0, W = g->nmx ? GU / g->nmx : 0; k < g->nmx; k++) {
        const float *mk = dp.mx + (size_t)k * B * D;
        if (dw) {
            BF_TRY(bf_cuda_rnn_mask_rows(st, dp.xm, x, D, mk, B, T, D, 0));
            BF_TRY(gemm(st, 1, 0, D, W, B * T, 1.0f, dp.xm, D, gates + (size_t)k * W, GU, 1.0f, dw + (size_t)k * W,
                        GU));
        }
        if (!dx) continue;
        BF_TRY(gemm(st, 0, 1, B * T, D, W, 1.0f, gates + (size_t)k * W, GU, w + (size_t)k * W, GU, 0.0f, dp.xm, D));
        BF_TRY(bf_cuda_rnn_mask_rows(st, dx, dp.xm, D, mk, B, T, D, dx_add || k > 0));
    }
    return BF_OK;
}
