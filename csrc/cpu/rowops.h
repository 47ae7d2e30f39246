/* rowops.h - the row kernels of LayerNormalization and attention's softmax
 * (layernorm.c, attention.c), written once (rowops_kern.h) and compiled per
 * instruction set: rowops_avx512.c, rowops_avx2.c and rowops_scalar.c (the
 * build's baseline). bf_rowops() hands the table for the instruction set in
 * use (cpu_isa.h: detected, capped by BF_CPU_ISA), read once per call.
 * Each kernel works on rows alone, so any split of the rows over the pool
 * gives the same bits; the instruction set may change the last bits (wider
 * partial sums, fused multiply-adds), never the threads. */
#ifndef BF_ROWOPS_H
#define BF_ROWOPS_H

#include <stddef.h>
#include <stdint.h>

/* batch row b's attention masks: attention_mask rows (TQ,TK), the query's
 * steps (TQ), the value's and key's steps (TK); NULL: none */
typedef struct {
    const float *m, *q, *v, *k;
    size_t TK;
} bf_row_masks;

/* one (TQ,TK) tile's softmax (forward) or its gradient (backward) */
typedef struct {
    int TQ, TK, causal, zero_empty;
    float rate, drop_scale; /* dropout rate; 1 / (1 - rate) */
    uint64_t seed, base;    /* dropout stream; the tile's first element index */
} bf_soft_tile;

typedef struct {
    /* out (N,C) = (inp - mean) * invstd * gamma + beta; mean, invstd (N) */
    void (*ln_fwd)(float *out, float *mean, float *invstd, const float *inp, const float *gamma, const float *beta,
                   long N, int C, float eps);
    /* dinp (N,C) and/or dgamma, dbeta (C, added to) from dout (N,C) */
    void (*ln_bwd)(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp, const float *mean,
                   const float *invstd, const float *gamma, long N, int C);
    /* s (TQ,TK) scores -> masked softmax over the keys, in place */
    void (*softmax)(float *s, const bf_row_masks *rm, const bf_soft_tile *t);
    /* dp (TQ,TK) = dO @ V^T -> dS = p * (dropout'(dp) - sum p * dropout'(dp)), in place */
    void (*softmax_bwd)(float *dp, const float *p, const bf_row_masks *rm, const bf_soft_tile *t);
} bf_rowops_t;

const bf_rowops_t *bf_rowops(void);

/* the tables per instruction set (rowops_*.c) */
extern const bf_rowops_t bf_rowops_scalar, bf_rowops_avx2, bf_rowops_avx512;

#endif
