/* attention.c - the core of multi-head attention on the CPU: for each
 * (batch, head), a task on the engine's pool, the scores by one sgemm
 * straight into the weights' tile, a masked softmax over keys in place,
 * dropout, and one sgemm into the head's columns of O. Backward recomputes
 * the dropout mask from its seed and needs one (TQ,TK) tile of scratch (two
 * with dropout) per thread. The tile products run in row parts small enough
 * for OpenBLAS's unpacked small-matrix kernels; the softmax rows are
 * rowops_kern.h, per instruction set (rowops.h). The projections around it
 * are Dense GEMMs over all positions at once (core/layers/attention.c). */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "blas_threads.h"
#include "counter_hash.h"
#include "cpu_ops.h"
#include "transpose.h"
#include "par.h"
#include "rowops.h"

/* attention dropout: element idx of the (B,H,TQ,TK) weights is kept when a
 * 24-bit uniform from (seed, idx) is >= rate; forward and backward (CPU and
 * CUDA) draw the same bits, so no mask is stored */
static inline int bf_attn_keep(uint64_t seed, uint64_t idx, float rate) {
    return bf_counter_uniform(seed, idx) >= rate;
}

/* The (b, h) tiles are independent tasks on the pool; on a busy machine the
 * threads wait on each other, so each direction times one thread against all
 * (blas_threads.h). */
static double work_of(const bf_attn_geom *g) {
    return (double)g->B * g->H * g->TQ * g->TK * (double)(g->DK + g->DV);
}

// batch row b's masks (rowops.h)
static bf_row_masks masks_of(const float *mask, const bf_attn_geom *g, int b) {
    const size_t TQ = (size_t)g->TQ, TK = (size_t)g->TK;
    bf_row_masks r = {mask ? mask + b * TQ * TK : NULL, g->qmask ? g->qmask + b * TQ : NULL,
                      g->vmask ? g->vmask + b * TK : NULL, g->kmask ? g->kmask + b * TK : NULL, TK};
    return r;
}

// the softmax kernels' view of tile t = (b, h)
static bf_soft_tile soft_tile(const bf_attn_geom *g, long t) {
    bf_soft_tile s = {g->TQ, g->TK, g->causal, g->zero_empty, g->rate,
                      g->rate > 0.0f ? 1.0f / (1.0f - g->rate) : 1.0f, g->seed,
                      (uint64_t)t * (uint64_t)g->TQ * (uint64_t)g->TK};
    return s;
}

/* Tiles run in parallel on the pool (par.h), one per thread at a time, so
 * the scratch is per slot: the transposed key (forward) or value (backward)
 * head, then forward the dropped-out tile, backward dP and that tile. When P
 * is one reused tile (p_tile: inference), slot 0 uses it and the other slots
 * have their own after all the slots' scratch. */
static size_t slot_floats(const bf_attn_geom *g, int backward) {
    const size_t tile = (size_t)g->TQ * (size_t)g->TK;
    const size_t head_t = (size_t)g->TK * (size_t)(backward ? g->DV : g->DK);
    if (backward) return head_t + tile * (g->rate > 0.0f ? 2 : 1);
    return head_t + (g->rate > 0.0f ? tile : 0);
}

/* OpenBLAS 0.3.34 multiplies a product of M*N*K <= 100^3 with its small-matrix
 * kernels, which do not pack: on a 128-token head (128 x 128 x 64) two parts
 * of 64 rows of C take 25% less time than the whole (one thread, measured),
 * for the forms it allows (row-major NN and TN; an NT product is made NN by
 * transposing B first). The parts are fixed by the shape, not the threads. */
#define SMALL_MNK 1000000.0

static int row_parts(int M, int N, int K) {
    int p = 1;
    while ((double)((M + p - 1) / p) * N * K > SMALL_MNK && p < 8 && (M + 2 * p - 1) / (2 * p) >= 16) p *= 2;
    return (double)((M + p - 1) / p) * N * K <= SMALL_MNK ? p : 1;
}

// C (M,N) = alpha * op(A) @ B (B: K,N), beta 0, in row_parts parts of C's rows
static void gemm_rows(int transA, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc) {
    const int parts = row_parts(M, N, K), step = (M + parts - 1) / parts;
    if (parts == 1) {
        bf_sgemm(transA, 0, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
        return;
    }
    for (int r = 0; r < M; r += step) {
        const int m = M - r < step ? M - r : step;
        bf_sgemm1(transA, 0, m, N, K, alpha, transA ? A + r : A + (size_t)r * lda, lda, B, ldb, 0.0f,
                  C + (size_t)r * ldc, ldc);
    }
}

// C (M,N) = alpha * A @ B^T (B: N,K with row stride ldb), beta 0; bt: scratch of K*N floats
static void gemm_nt(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float *bt,
                    float *C, int ldc) {
    if (row_parts(M, N, K) == 1) {
        bf_sgemm(0, 1, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
        return;
    }
    bf_transpose(bt, B, N, K, ldb);
    gemm_rows(0, M, N, K, alpha, A, lda, bt, N, C, ldc);
}

size_t bf_cpu_attention_workspace_bytes(bf_backend *be, const bf_attn_geom *g, int backward) {
    (void)be;
    const size_t slots = (size_t)bf_par_slots(), tile = (size_t)g->TQ * (size_t)g->TK;
    return sizeof(float) * (slot_floats(g, backward) * slots + (!backward && g->p_tile ? tile * (slots - 1) : 0));
}

// d (TQ,TK) = p * keep / (1 - rate) for tile (b, h)
static void drop_tile(float *d, const float *p, const bf_attn_geom *g, int b, int h) {
    const size_t n = (size_t)g->TQ * g->TK, base = ((size_t)b * g->H + h) * n;
    const float sc = 1.0f / (1.0f - g->rate);
    for (size_t e = 0; e < n; e++) d[e] = bf_attn_keep(g->seed, base + e, g->rate) ? p[e] * sc : 0.0f;
}

/* one attention call's arguments, shared by its tile tasks */
typedef struct {
    const bf_attn_geom *g;
    float *O, *P, *ws, *dQ, *dK, *dV;
    const float *Q, *K, *V, *dO, *Pk, *mask;
} attn_job;

// tile t = (b, h) of the forward: P's tile and the head's columns of O
static void forward_tile(void *ctx, long t, int slot) {
    const attn_job *j = ctx;
    const bf_attn_geom *g = j->g;
    const int H = g->H, TQ = g->TQ, TK = g->TK, DK = g->DK, DV = g->DV, b = (int)(t / H), h = (int)(t % H);
    const size_t tile = (size_t)TQ * TK, per = slot_floats(g, 0);
    float *kt = j->ws + (size_t)slot * per, *ws = kt + (size_t)TK * DK;
    float *p = !g->p_tile ? j->P + (size_t)t * tile
               : slot == 0 ? j->P
                           : j->ws + (size_t)bf_par_slots() * per + (size_t)(slot - 1) * tile;
    const float *q = j->Q + (size_t)b * TQ * H * DK + (size_t)h * DK;
    const float *k = j->K + (size_t)b * TK * H * DK + (size_t)h * DK;
    const float *v = j->V + (size_t)b * TK * H * DV + (size_t)h * DV;
    float *o = j->O + (size_t)b * TQ * H * DV + (size_t)h * DV;
    gemm_nt(TQ, TK, DK, g->scale, q, H * DK, k, H * DK, kt, p, TK);
    const bf_row_masks rm = masks_of(j->mask, g, b);
    const bf_soft_tile st = soft_tile(g, t);
    bf_rowops()->softmax(p, &rm, &st);
    const float *src = p;
    if (g->rate > 0.0f) {
        drop_tile(ws, p, g, b, h);
        src = ws;
    }
    gemm_rows(0, TQ, DV, TK, 1.0f, src, TK, v, H * DV, o, H * DV);
}

// O (B,TQ,H,DV), P (B,H,TQ,TK) <- Q (B,TQ,H,DK), K (B,TK,H,DK), V (B,TK,H,DV), mask (B,TQ,TK), g's step masks
bf_status bf_cpu_attention_forward(bf_backend *be, float *O, float *P, void *ws, const float *Q, const float *K,
                                   const float *V, const float *mask, const bf_attn_geom *g) {
    (void)be;
    const int B = g->B, H = g->H, TQ = g->TQ, TK = g->TK, DK = g->DK, DV = g->DV;
    if (B <= 0 || H <= 0 || TQ <= 0 || TK <= 0 || DK <= 0 || DV <= 0)
        return BF_FAIL(BF_ERR_SHAPE, "attention: bad sizes B=%d H=%d TQ=%d TK=%d DK=%d DV=%d", B, H, TQ, TK, DK, DV);
    attn_job j = {.g = g, .O = O, .P = P, .ws = ws, .Q = Q, .K = K, .V = V, .mask = mask};
    static bf_blas_tune tune;
    bf_tune_run tr = bf_tune_begin(&tune);
    bf_par_for((long)B * H, tr.mode ? bf_par_threads() : 1, forward_tile, &j);
    bf_tune_end(&tr, work_of(g));
    return BF_OK;
}

// tile t = (b, h) of the backward: the head's columns of dQ, dK, dV
static void backward_tile(void *ctx, long t, int slot) {
    const attn_job *j = ctx;
    const bf_attn_geom *g = j->g;
    const int H = g->H, TQ = g->TQ, TK = g->TK, DK = g->DK, DV = g->DV, b = (int)(t / H), h = (int)(t % H);
    const size_t tile = (size_t)TQ * TK;
    float *vt = j->ws + (size_t)slot * slot_floats(g, 1), *dp = vt + (size_t)TK * DV, *pd = dp + tile;
    const float *p = j->Pk + (size_t)t * tile;
    const bf_row_masks rm = masks_of(j->mask, g, b);
    const size_t qo = (size_t)b * TQ * H * DK + (size_t)h * DK, ko = (size_t)b * TK * H * DK + (size_t)h * DK;
    const size_t vo = (size_t)b * TK * H * DV + (size_t)h * DV, oo = (size_t)b * TQ * H * DV + (size_t)h * DV;
    const float *src = p;
    if (g->rate > 0.0f) {
        drop_tile(pd, p, g, b, h);
        src = pd;
    }
    // dV (TK,DV) = dropout(P)^T @ dO; dP (TQ,TK) = dO @ V^T
    gemm_rows(1, TK, DV, TQ, 1.0f, src, TK, j->dO + oo, H * DV, j->dV + vo, H * DV);
    gemm_nt(TQ, TK, DV, 1.0f, j->dO + oo, H * DV, j->V + vo, H * DV, vt, dp, TK);
    const bf_soft_tile st = soft_tile(g, t);
    bf_rowops()->softmax_bwd(dp, p, &rm, &st);
    // dQ (TQ,DK) = scale * dS @ K; dK (TK,DK) = scale * dS^T @ Q
    gemm_rows(0, TQ, DK, TK, g->scale, dp, TK, j->K + ko, H * DK, j->dQ + qo, H * DK);
    gemm_rows(1, TK, DK, TQ, g->scale, dp, TK, j->Q + qo, H * DK, j->dK + ko, H * DK);
}

// dQ, dK, dV (overwritten) <- dO (B,TQ,H,DV) through the kept weights P
bf_status bf_cpu_attention_backward(bf_backend *be, float *dQ, float *dK, float *dV, void *ws, const float *dO,
                                    const float *Q, const float *K, const float *V, const float *P,
                                    const float *mask, const bf_attn_geom *g) {
    (void)be;
    if (g->p_tile) return BF_FAIL(BF_ERR_INTERNAL, "attention backward: the weights were not kept");
    attn_job j = {.g = g, .dQ = dQ, .dK = dK, .dV = dV, .ws = ws, .Q = Q, .K = K, .V = V, .dO = dO, .Pk = P,
                  .mask = mask};
    static bf_blas_tune tune;
    bf_tune_run tr = bf_tune_begin(&tune);
    bf_par_for((long)g->B * g->H, tr.mode ? bf_par_threads() : 1, backward_tile, &j);
    bf_tune_end(&tr, work_of(g));
    return BF_OK;
}
