/* random.c - RANDOM: keras.random's normal, uniform, truncated_normal and
 * dropout's keep mask on a symbolic shape inside a custom layer's call()
 * (python/boundfit/random.py), drawn by AUGMENT's noise kernels (bf_augment
 * noise 3: the counter-based stream of counter_hash.h), per sample, or one
 * draw for every sample (bf_random_cfg.shared). It hangs on a tensor of that call only
 * for the batch size and sends it no gradient. Its stream: its seed (or,
 * seed=None, the run's) mixed with the optimizer iteration, each
 * micro-batch drawing its rows' part of the step's draw (a SeedGenerator:
 * new draws every step, the same for a fresh model with the same seeds,
 * with or without micro_batch=), or outside training with the run's seed and
 * the forward's count (new draws per batch and per evaluate / predict call);
 * an int seed (bf_random_cfg.fixed) draws the same every step, as Keras. */
#include "layer.h"

#include <string.h>

static bf_status parse(bf_layer *L, const bf_spec *s) {
    bf_random_cfg *c = &L->cfg.random;
    BF_TRY(bf_spec_int(s, "rnd_dist", 0, &c->dist));
    BF_TRY(bf_spec_int(s, "rnd_shared", 0, &c->shared));
    BF_TRY(bf_spec_int(s, "rnd_fixed", 0, &c->fixed));
    BF_TRY(bf_spec_float(s, "rnd_a", 0.0f, &c->a));
    BF_TRY(bf_spec_float(s, "rnd_b", 0.0f, &c->b));
    return s->get_seed(s, "aug_seed", &c->seed);
}

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    const bf_random_cfg *c = &L->cfg.random;
    if (L->out_rank < 1) return BF_FAIL(BF_ERR_SHAPE, "%s: a random draw needs a shape", L->name);
    if (c->dist < 0 || c->dist > 3) return BF_FAIL(BF_ERR_ARG, "%s: unknown distribution %d", L->name, c->dist);
    if (!(c->a == c->a && c->b == c->b && c->a > -3.4e38f && c->a < 3.4e38f && c->b > -3.4e38f && c->b < 3.4e38f))
        return BF_FAIL(BF_ERR_ARG, "%s: the distribution's parameters must be finite", L->name);
    if ((c->dist == 0 || c->dist == 2) && !(c->b >= 0.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: stddev must be >= 0, got %g", L->name, (double)c->b);
    if (c->dist == 1 && !(c->a < c->b))
        return BF_FAIL(BF_ERR_ARG, "%s: minval must be below maxval, got %g and %g", L->name, (double)c->a,
                       (double)c->b);
    if (c->dist == 3 && !(c->a >= 0.0f && c->a < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: the dropout rate must be in [0, 1), got %g", L->name, (double)c->a);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->augment_forward != NULL;
}

// out (B, shape...) = draws; the input (the anchor) is not read
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_random_cfg *c = &L->cfg.random;
    if (!r->aug_base[i]) { /* the node's stream: its seed, or (none) the run's */
        uint64_t s = c->seed ? c->seed : r->dropout_seed ^ ((uint64_t)i << 40);
        if (c->seed && !c->fixed && r->mode != BF_MODE_TRAIN) /* evaluate / predict: new per call */
            s ^= bf_splitmix64(r->dropout_seed);
        r->aug_base[i] = bf_splitmix64(s) | 1u;
    }
    bf_augment a;
    memset(&a, 0, sizeof a);
    a.noise = 3;
    a.rdist = c->dist;
    a.rshared = c->shared;
    a.ra = c->a;
    a.rb = c->b;
    a.B = rows;
    a.H = a.OH = a.C = 1;
    a.W = a.OW = (int)L->out_size;
    /* training: one stream per step, each micro-batch at its rows' place in it (micro_batch= draws what the
     * whole batch would); evaluate / predict: one per forward */
    const int train = r->mode == BF_MODE_TRAIN;
    const uint64_t step = (uint64_t)r->aug_it * 4096u + (train ? 0u : (uint64_t)r->aug_micro);
    a.e0 = train ? r->micro_row * L->out_size : 0;
    a.seed = c->fixed ? r->aug_base[i] : bf_splitmix64(r->aug_base[i] ^ bf_splitmix64(step));
    return r->be->augment_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &a);
}

const bf_layer_ops bf_ops_RANDOM = {
    .name = "RANDOM", .flags = BF_LF_OUT_GIVEN | BF_LF_NO_GRAD_IN, .parse = parse, .infer = infer, .supported = supported,
    .forward = forward,
};
