/* loss_scale.c - dynamic loss scaling as keras.mixed_precision.LossScaleOptimizer
 * on Keras 3's JAX backend (_stateless_handle_finite_grads): the losses'
 * gradient was multiplied by the scale (run.c, seq_loss.c), so the parameter
 * gradients are the scaled ones; a non-finite one skips the step and halves
 * the scale, growth_steps finite steps in a row double it. On the growth step
 * JAX's Keras doubles the scale before it divides the gradients, so they are
 * divided by the doubled scale there; so are they here. The division is a
 * multiplication by 1 / scale: the same floats for a power of two (every
 * scale from a power-of-two initial_scale), within an ulp otherwise. An optimizer's fixed loss_scale_factor is
 * the same without the dynamics: the gradients divided by it on every step. */
#include "loss_scale.h"

bf_status bf_loss_scale_step(bf_run *r, int bad, int *apply) {
    bf_optimizer *o = &r->m->opt;
    *apply = 1;
    if (!o->growth_steps && o->loss_scale_factor > 0.0f && r->m->n_trainable) /* Keras's loss_scale_factor: g / it */
        return r->be->ewise(r->be, r->grads, r->grads, NULL, NULL, BF_EW_SCALE,
                            (float)(1.0 / (double)o->loss_scale_factor), r->m->n_trainable);
    if (!o->growth_steps) return BF_OK;
    if (bad) {
        *apply = 0;
        o->scale_counter = 0;
        o->loss_scale *= 0.5f;
        return BF_OK;
    }
    if (o->scale_counter == o->growth_steps - 1) {
        o->scale_counter = 0;
        o->loss_scale *= 2.0f;
    } else {
        o->scale_counter++;
    }
    const long n = r->m->n_trainable;
    if (n == 0) return BF_OK;
    return r->be->ewise(r->be, r->grads, r->grads, NULL, NULL, BF_EW_SCALE, (float)(1.0 / (double)o->loss_scale), n);
}
