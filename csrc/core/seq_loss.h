/* seq_loss.h - losses and metrics per position of a sequence output (rank >=
 * 2 per sample, e.g. (T, C)), as Keras 3: the loss works over the last axis
 * at each of the S = size / C positions and is averaged over all B*S
 * ("sum_over_batch_size"); sample_weight (B) is broadcast over the steps; a
 * mask the output carries (Embedding mask_zero) weighs the loss with
 * divide_no_nan(B*S, kept) at kept positions and 0 elsewhere, and the mean
 * metrics with 0/1 (losses/loss.py apply_mask). Outputs whose loss and
 * metrics are the same per sample keep the per-sample path. */
#ifndef BF_SEQ_LOSS_H
#define BF_SEQ_LOSS_H

#include "step.h"

/* output k's loss runs per position (a mask, or CCE / SCCE with S > 1) */
int bf_seq_loss_per_position(const bf_model *m, int k);
/* output k goes through bf_seq_loss_and_metrics (rank >= 2 and S > 1 or a mask) */
int bf_seq_output_per_position(const bf_model *m, int k);
/* metric q runs per position (fused softmax, accuracy family, or masked) */
int bf_seq_metric_per_position(const bf_model *m, const bf_metric_spec *q, int fused);
/* program.c: output k's buffers (loss values per position, weights) used at
 * time t (weighted: the run has sample-weight slots) */
bf_status bf_seq_loss_plan(bf_run *r, int k, int t, int weighted);
/* run.c: output k's loss, gradient and metrics for `rows` rows (scale: 1 / batch rows) */
bf_status bf_seq_loss_and_metrics(bf_run *r, int k, int rows, float scale, float *pred, const float *tgt);

#endif
