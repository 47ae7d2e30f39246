/* random.c - RANDOM: keras.random's normal, uniform, truncated_normal and
 * dropout's keep mask on a symbolic shape inside a custom layer's call()
 * (python/boundfit/random.py), drawn by AUGMENT's noise kernels (bf_augment
 * noise 3: the counter-based stream of counter_hash.h), per sample, or one
 * draw for every sample (aug.rshared). It hangs on a tensor of that call only
 * for the batch size and sends it no gradient. Its stream: its seed (or,
 * seed=None, the run's) mixed with the optimizer iteration, each
 * micro-batch drawing its rows' part of the step's draw (a SeedGenerator:
 * new draws every step, the same for a fresh model with the same seeds,
 * with or without micro_batch=), or outside training with the run's seed and
 * the forward's count (new draws per batch and per evaluate / predict call);
 * an int seed (rfixed) draws the same every step, as Keras. */
#include "layer.h"

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    const bf_augment *a = &L->aug;
    if (L->out_rank < 1) return BF_FAIL(BF_ERR_SHAPE, "%s: a random draw needs a shape", L->name);
    if (a->rdist < 0 || a->rdist > 3) return BF_FAIL(BF_ERR_ARG, "%s: unknown distribution %d", L->name, a->rdist);
    if (!(a->ra == a->ra && a->rb == a->rb && a->ra > -3.4e38f && a->ra < 3.4e38f && a->rb > -3.4e38f &&
          a->rb < 3.4e38f))
        return BF_FAIL(BF_ERR_ARG, "%s: the distribution's parameters must be finite", L->name);
    if ((a->rdist == 0 || a->rdist == 2) && !(a->rb >= 0.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: stddev must be >= 0, got %g", L->name, (double)a->rb);
    if (a->rdist == 1 && !(a->ra < a->rb))
        return BF_FAIL(BF_ERR_ARG, "%s: minval must be below maxval, got %g and %g", L->name, (double)a->ra,
                       (double)a->rb);
    if (a->rdist == 3 && !(a->ra >= 0.0f && a->ra < 1.0f))
        return BF_FAIL(BF_ERR_ARG, "%s: the dropout rate must be in [0, 1), got %g", L->name, (double)a->ra);
    return BF_OK;
}

static int supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->augment_forward != NULL;
}

// out (B, shape...) = draws; the input (the anchor) is not read
static bf_status forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    if (!r->aug_base[i]) { /* the node's stream: its seed, or (none) the run's */
        uint64_t s = L->aug.seed ? L->aug.seed : r->dropout_seed ^ ((uint64_t)i << 40);
        if (L->aug.seed && !L->rfixed && r->mode != BF_MODE_TRAIN) /* evaluate / predict: new per call */
            s ^= bf_splitmix64(r->dropout_seed);
        r->aug_base[i] = bf_splitmix64(s) | 1u;
    }
    bf_augment a;
    memset(&a, 0, sizeof a);
    a.noise = 3;
    a.rdist = L->aug.rdist;
    a.rshared = L->aug.rshared;
    a.ra = L->aug.ra;
    a.rb = L->aug.rb;
    a.B = rows;
    a.H = a.OH = a.C = 1;
    a.W = a.OW = (int)L->out_size;
    /* training: one stream per step, each micro-batch at its rows' place in it (micro_batch= draws what the
     * whole batch would); evaluate / predict: one per forward */
    const int train = r->mode == BF_MODE_TRAIN;
    const uint64_t step = (uint64_t)r->aug_it * 4096u + (train ? 0u : (uint64_t)r->aug_micro);
    a.e0 = train ? r->micro_row * L->out_size : 0;
    a.seed = L->rfixed ? r->aug_base[i] : bf_splitmix64(r->aug_base[i] ^ bf_splitmix64(step));
    return r->be->augment_forward(r->be, bf_step_out(r, i), bf_step_in(r, i), &a);
}

const bf_layer_ops bf_ops_RANDOM = {
    .name = "RANDOM", .flags = BF_LF_OUT_GIVEN | BF_LF_NO_GRAD_IN, .infer = infer, .supported = supported,
    .forward = forward,
};
