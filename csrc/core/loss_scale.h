/* loss_scale.h - dynamic loss scaling (keras.mixed_precision.LossScaleOptimizer) at the end of a training step. */
#ifndef BF_LOSS_SCALE_H
#define BF_LOSS_SCALE_H

#include "step.h"

/* After the step's gradients are summed and checked (bad: some is NaN or Inf). Without loss scaling *apply = 1.
 * With it, as Keras 3 on JAX: a non-finite gradient halves the scale, resets the counter and skips the update
 * (*apply = 0, iterations unchanged); else the scale doubles when the counter reaches growth_steps - 1 (the
 * counter back to 0), else the counter grows, and the gradients are divided by the scale as it is now. With an
 * optimizer's loss_scale_factor (no dynamics) the gradients are divided by it */
bf_status bf_loss_scale_step(bf_run *r, int bad, int *apply);

#endif
