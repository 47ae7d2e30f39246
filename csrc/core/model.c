/* model.c - shape inference over the graph, parameter layout and
 * initialization, optimizer state. Trainable parameters are laid out first so
 * that gradients and optimizer slots mirror them one to one; a node that
 * shares another's parameters gets the owner's offsets. */
#include "model.h"
#include "backend_registry.h"
#include "layer_registry.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* role: the index into L->inits (kernel/gamma 0, bias/beta 1, moving_mean 2,
 * moving_variance 3); a user initializer there replaces the default */
static void add_param(bf_layer *L, int role, const char *name, int rank, const int *shape, int trainable,
                      bf_init init, float fan_in, float fan_out) {
    bf_param *p = &L->params[L->nparam++];
    memset(p, 0, sizeof *p);
    /* a long layer name is cut (display only; the terminator is always there) */
    int len = snprintf(p->name, sizeof p->name, "%s/%s", L->name, name);
    if (len < 0) p->name[0] = '\0';
    p->rank = rank;
    p->n = 1;
    for (int i = 0; i < rank; i++) { /* -1: a dimension < 1 or too many elements (check_params refuses it) */
        p->shape[i] = shape[i];
        if (p->n < 0 || shape[i] < 1 || __builtin_mul_overflow(p->n, (long)shape[i], &p->n) || p->n > BF_MAX_FLOATS)
            p->n = -1;
    }
    p->trainable = trainable;
    p->init = init;
    p->fan_in = fan_in;
    p->fan_out = fan_out;
    if (rank == 1) p->fan_in = p->fan_out = (float)shape[0];  /* Keras compute_fans */
    p->l1 = L->reg[role][0];
    p->l2 = L->reg[role][1];
    p->con = L->cons[role];
    const bf_init_spec *u = &L->inits[role];
    if (u->set) {
        p->init = u->kind;
        p->init_a = u->a;
        p->init_b = u->b;
        p->init_mode = u->mode;
    }
}

void bf_add_param(bf_layer *L, int role, const char *name, int rank, const int *shape, int trainable, bf_init init,
                  float fan_in, float fan_out) {
    add_param(L, role, name, rank, shape, trainable, init, fan_in, fan_out);
}

/* elements of a per-sample shape; -1 when a dimension is < 1 or there are more than INT_MAX (the kernels' sizes) */
static long prod(const int *s, int r) {
    long n = 1;
    for (int i = 0; i < r; i++)
        if (s[i] < 1 || __builtin_mul_overflow(n, (long)s[i], &n) || n > INT_MAX) return -1;
    return n;
}

bf_status bf_out_dim(const bf_layer *L, long long v, int *out) {
    if (v < 1 || v > INT_MAX)
        return BF_FAIL(BF_ERR_ARG, "%s: an output dimension of %lld is outside the engine's range 1 to %d", L->name, v,
                       INT_MAX);
    *out = (int)v;
    return BF_OK;
}

/* a layer's output and weights are within the engine's sizes: INT_MAX elements per sample, BF_MAX_FLOATS per weight */
static bf_status check_sizes(const bf_layer *L) {
    char sh[64];
    if (L->out_size < 0) {
        bf_shape_str(sh, sizeof sh, L->out_rank, L->out_shape);
        return BF_FAIL(BF_ERR_ARG, "%s: output shape %s is outside the engine's range (every dimension at least 1, at "
                       "most %d elements per sample)", L->name, sh, INT_MAX);
    }
    for (int j = 0; j < L->nparam; j++)
        if (L->params[j].n < 0) {
            bf_shape_str(sh, sizeof sh, L->params[j].rank, L->params[j].shape);
            return BF_FAIL(BF_ERR_ARG, "%s: weight %s of shape %s is outside the engine's range (every dimension at "
                           "least 1, at most 2**%d elements)", L->name, L->params[j].name, sh, BF_MAX_FLOATS_LOG2);
        }
    return BF_OK;
}

void bf_shape_str(char *buf, size_t n, int rank, const int *shape) {
    int o = snprintf(buf, n, "(");
    for (int i = 0; i < rank && o < (int)n; i++) o += snprintf(buf + o, n - (size_t)o, i ? ", %d" : "%d", shape[i]);
    if (o < (int)n) snprintf(buf + o, n - (size_t)o, rank == 1 ? ",)" : ")");
}

/* the first input's shape into L, then the kind's inference (layers/) */
static bf_status infer_layer(bf_layer *L, const bf_layer_ops *ops, int rank, const int *shape) {
    L->in_rank = rank;
    memcpy(L->in_shape, shape, sizeof(int) * (size_t)rank);
    L->in_size = prod(shape, rank);
    L->nparam = 0;
    if (rank > BF_BASE_RANK && !(ops->flags & BF_LF_ANY_RANK)) {
        char sh[96];
        bf_shape_str(sh, sizeof sh, rank, shape);
        return BF_FAIL(BF_ERR_SHAPE, "%s (%s) takes samples of at most %d axes, got a rank-%d sample %s", L->name,
                       ops->name, BF_BASE_RANK, rank, sh);
    }
    if (rank == 0 && !(ops->flags & BF_LF_SCALAR))
        return BF_FAIL(BF_ERR_SHAPE, "%s (%s) does not take one number per sample (an input of shape (None,)); "
                       "give it shape (None, 1) (keras.ops.expand_dims(x, -1))", L->name, ops->name);
    if (!(ops->flags & BF_LF_OUT_GIVEN)) { /* Reshape's out_rank / out_shape are its target, given by the caller */
        L->out_rank = rank;
        memcpy(L->out_shape, shape, sizeof(int) * (size_t)rank);
    }
    BF_TRY(ops->infer(L, rank, shape));
    L->out_size = prod(L->out_shape, L->out_rank);
    return check_sizes(L);
}

static bf_status check_share(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    if (L->share >= i || L->share < 0) return BF_FAIL(BF_ERR_ARG, "%s: shares parameters with node %d, not an earlier one", L->name, L->share);
    const bf_layer *O = &m->layers[L->share];
    int ok = O->kind == L->kind && O->nparam == L->nparam;
    for (int j = 0; ok && j < L->nparam; j++) {
        ok = O->params[j].rank == L->params[j].rank;
        for (int d = 0; ok && d < L->params[j].rank; d++) ok = O->params[j].shape[d] == L->params[j].shape[d];
    }
    if (!ok) {
        char a[48], b[48];
        bf_shape_str(a, sizeof a, O->in_rank, O->in_shape);
        bf_shape_str(b, sizeof b, L->in_rank, L->in_shape);
        return BF_FAIL(BF_ERR_SHAPE, "layer '%s' was built for inputs of shape %s and is called again on shape %s; "
                       "its weights do not fit", O->name, a, b);
    }
    for (int j = 0; j < L->nparam; j++) L->params[j] = O->params[j];
    L->frozen = O->frozen;
    return BF_OK;
}

bf_status bf_model_infer_node(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    int self_t = m->n_inputs + i;
    if (!L->in_ids) return BF_FAIL(BF_ERR_INTERNAL, "%s: no room for its input ids in the model's pool", L->name);
    if (L->nin <= 0) { L->nin = 1; L->in_ids[0] = i == 0 ? 0 : self_t - 1; } /* a chain */
    if (L->nin > BF_MAX_NODE_IN)
        return BF_FAIL(BF_ERR_ARG, "%s: at most %d input tensors (boundfit._core.MAX_NODE_INPUTS), got %d", L->name,
                       BF_MAX_NODE_IN, L->nin);
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    if (!ops) return BF_FAIL(BF_ERR_ARG, "%s: unknown layer kind %d", L->name, (int)L->kind);
    if (L->nin > 1 && !(ops->flags & BF_LF_MULTI_IN)) return BF_FAIL(BF_ERR_ARG, "%s takes one input, got %d", L->name, L->nin);
    for (int j = 0; j < L->nin; j++)
        if (L->in_ids[j] < 0 || L->in_ids[j] >= self_t)
            return BF_FAIL(BF_ERR_ARG, "%s: input tensor %d is not defined before it (nodes must be in topological order)",
                           L->name, L->in_ids[j]);
    if (L->modes < 0 || L->modes > 3 || L->train_mode < 0 || L->train_mode > 2)
        return BF_FAIL(BF_ERR_ARG, "%s: modes must be in 0..3 and train_mode in 0..2, got %d and %d", L->name,
                       L->modes, L->train_mode);
    for (int j = 1; j < L->nin; j++) /* the first input's rank is infer_layer's check */
        if (m->t_rank[L->in_ids[j]] > BF_BASE_RANK && !(ops->flags & BF_LF_ANY_RANK))
            return BF_FAIL(BF_ERR_SHAPE, "%s (%s) takes samples of at most %d axes, got a rank-%d input %d", L->name,
                           ops->name, BF_BASE_RANK, m->t_rank[L->in_ids[j]], j);
    int t0 = L->in_ids[0];
    BF_TRY(infer_layer(L, ops, m->t_rank[t0], m->t_shape[t0]));
    if (ops->check) BF_TRY(ops->check(m, i));
    L->out_size = prod(L->out_shape, L->out_rank);
    BF_TRY(check_sizes(L));
    if (L->share >= 0 || L->share < -1) BF_TRY(check_share(m, i));
    for (int j = 0; j < L->nin; j++) m->t_uses[L->in_ids[j]]++;
    m->t_rank[self_t] = L->out_rank;
    memcpy(m->t_shape[self_t], L->out_shape, sizeof L->out_shape);
    m->t_size[self_t] = L->out_size;
    m->t_uses[self_t] = 0;
    m->t_mask[self_t] = -1; /* layers without mask support drop it, as in Keras */
    if (ops->mask) BF_TRY(ops->mask(m, i, &m->t_mask[self_t]));
    return BF_OK;
}

bf_status bf_model_infer(bf_model *m) {
    if (m->nlayers <= 0) return BF_FAIL(BF_ERR_ARG, "the model has no layers");
    if (m->n_inputs <= 0) { /* Sequential: one input, given as in_rank / in_shape */
        m->n_inputs = 1;
        m->in_ranks[0] = m->in_rank;
        memcpy(m->in_shapes[0], m->in_shape, sizeof m->in_shape);
    }
    if (m->n_inputs > BF_MAX_INPUTS)
        return BF_FAIL(BF_ERR_ARG, "at most %d inputs are supported (boundfit._core.MAX_INPUTS), got %d", BF_MAX_INPUTS,
                       m->n_inputs);
    m->x_row = 0;
    for (int k = 0; k < m->n_inputs; k++) {
        if (m->in_ranks[k] < 0 || m->in_ranks[k] > BF_MAX_RANK) /* 0: one number per sample */
            return BF_FAIL(BF_ERR_SHAPE, "input_shape must have 0 to %d dimensions (boundfit._core.MAX_RANK), got %d",
                           BF_MAX_RANK, m->in_ranks[k]);
        m->in_sizes[k] = prod(m->in_shapes[k], m->in_ranks[k]);
        m->in_offs[k] = m->x_row;
        m->x_row += m->in_sizes[k];
        if (m->in_sizes[k] < 0 || m->x_row > INT_MAX) {
            char sh[64];
            bf_shape_str(sh, sizeof sh, m->in_ranks[k], m->in_shapes[k]);
            return BF_FAIL(BF_ERR_ARG, "input %d: shape %s is outside the engine's range (every dimension at least 1, "
                           "at most %d elements per sample in all inputs)", k, sh, INT_MAX);
        }
        m->t_rank[k] = m->in_ranks[k];
        memcpy(m->t_shape[k], m->in_shapes[k], sizeof m->t_shape[k]);
        m->t_size[k] = m->in_sizes[k];
        m->t_uses[k] = 0;
        m->t_mask[k] = -1;
    }
    m->in_rank = m->in_ranks[0];
    memcpy(m->in_shape, m->in_shapes[0], sizeof m->in_shape);
    m->in_size = m->in_sizes[0];
    for (int i = 0; i < m->nlayers; i++) BF_TRY(bf_model_infer_node(m, i));
    if (m->n_outputs <= 0) { m->n_outputs = 1; m->out_t[0] = m->n_inputs + m->nlayers - 1; }
    if (m->n_outputs > BF_MAX_OUTPUTS)
        return BF_FAIL(BF_ERR_ARG, "at most %d outputs are supported (boundfit._core.MAX_OUTPUTS), got %d",
                       BF_MAX_OUTPUTS, m->n_outputs);
    m->pred_row = 0;
    for (int k = 0; k < m->n_outputs; k++) {
        int t = m->out_t[k];
        if (t < 0 || t >= m->n_inputs + m->nlayers) return BF_FAIL(BF_ERR_ARG, "output %d: no tensor %d", k, t);
        for (int j = 0; j < k; j++)
            if (m->out_t[j] == t) return BF_FAIL(BF_ERR_ARG, "outputs %d and %d are the same tensor", j, k);
        m->out_offs[k] = m->pred_row;
        m->pred_row += m->t_size[t];
        if (m->pred_row > INT_MAX)
            return BF_FAIL(BF_ERR_ARG, "the model's outputs have more than %d elements per sample in all", INT_MAX);
    }
    /* every node leads to an output (backward relies on it) */
    int *live = m->work; /* (tensors) */
    memset(live, 0, sizeof(int) * (size_t)(m->n_inputs + m->nlayers));
    for (int k = 0; k < m->n_outputs; k++) live[m->out_t[k]] = 1;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        if (!live[m->n_inputs + i])
            return BF_FAIL(BF_ERR_ARG, "node '%s' does not lead to any output of the model", m->layers[i].name);
        for (int j = 0; j < m->layers[i].nin; j++) live[m->layers[i].in_ids[j]] = 1;
    }
    /* frozen nodes' parameters are not trainable; sharers follow their owner */
    for (int i = 0; i < m->nlayers; i++) {
        bf_layer *L = &m->layers[i];
        if (L->share >= 0) continue;
        for (int j = 0; j < L->nparam; j++)
            if (L->frozen) L->params[j].trainable = 0;
    }
    /* trainable first, then the rest; gradients mirror the trainable block */
    size_t off = 0;
    m->n_trainable = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < m->nlayers; i++)
            for (int j = 0; j < m->layers[i].nparam && m->layers[i].share < 0; j++) {
                bf_param *p = &m->layers[i].params[j];
                if (p->trainable != pass) continue;
                p->offset = off;
                p->grad_offset = pass ? off : 0;
                off += (size_t)p->n;
                if (off > (size_t)BF_MAX_FLOATS) /* every weight is at most that: no wrap before this */
                    return BF_FAIL(BF_ERR_ARG, "%s: the model's weights have more than 2**%d elements up to its %s",
                                   m->layers[i].name, BF_MAX_FLOATS_LOG2, p->name);
                if (pass) m->n_trainable = (long)off;
            }
    m->n_params = (long)off;
    for (int i = 0; i < m->nlayers; i++)
    {
        if (m->layers[i].share >= 0)
            for (int j = 0; j < m->layers[i].nparam; j++) m->layers[i].params[j] = m->layers[m->layers[i].share].params[j];
        for (int j = 0; j < m->layers[i].nparam; j++) {
            const bf_param *p = &m->layers[i].params[j];
            if (!(p->l1 >= 0.0f && p->l2 >= 0.0f && isfinite(p->l1) && isfinite(p->l2)))
                return BF_FAIL(BF_ERR_ARG, "%s: regularizer factors must be finite and >= 0, got l1=%g l2=%g", p->name,
                               (double)p->l1, (double)p->l2);
            if (p->con.kind != BF_CON_NONE && p->con.kind != BF_CON_NON_NEG &&
                (p->con.axis_lo < 0 || p->con.axis_hi < p->con.axis_lo || p->con.axis_hi >= p->rank))
                return BF_FAIL(BF_ERR_ARG, "%s: constraint axis %d..%d is outside its %d axes", p->name,
                               p->con.axis_lo, p->con.axis_hi, p->rank);
        }
    }
    return BF_OK;
}


/* a standard normal draw: Box-Muller on two 24-bit uniforms (0, 1) */
static double normal01(uint64_t seed, uint64_t i) {
    double u1 = ((double)bf_counter_uniform(seed, 2 * i) + 0.5 / 16777216.0);
    double u2 = (double)bf_counter_uniform(seed, 2 * i + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* a standard normal draw cut at +-2 (Keras / TF truncated_normal: redrawn) */
static double trunc_normal01(uint64_t seed, uint64_t i) {
    for (uint64_t t = 0;; t++) {
        double z = normal01(bf_splitmix64(seed + t * 0x632BE59BD9B4E019ull), i);
        if (fabs(z) <= 2.0) return z;
    }
}

/* w (q->n): q's initializer other than zeros / ones / the default glorot.
 * Orthogonal: Gram-Schmidt on a normal (rows, cols) matrix, rows = prod of
 * all but the last axis, over the shorter side; equal to Keras's QR with the
 * signs of diag(R) folded in. */
static void init_param(float *w, const bf_param *q, uint64_t seed) {
    float fan = q->init_mode == BF_FAN_IN ? q->fan_in : q->init_mode == BF_FAN_OUT ? q->fan_out
                                                                                : 0.5f * (q->fan_in + q->fan_out);
    if (fan < 1.0f) fan = 1.0f;
    double a = q->init_a, b = q->init_b;
    switch (q->init) {
    case BF_INIT_CONSTANT: for (long k = 0; k < q->n; k++) w[k] = (float)a; break;
    case BF_INIT_RANDOM_UNIFORM:
        for (long k = 0; k < q->n; k++) w[k] = (float)(a + (b - a) * bf_counter_uniform(seed, (uint64_t)k));
        break;
    case BF_INIT_RANDOM_NORMAL: for (long k = 0; k < q->n; k++) w[k] = (float)(a + b * normal01(seed, (uint64_t)k)); break;
    case BF_INIT_TRUNCATED_NORMAL:
        for (long k = 0; k < q->n; k++) w[k] = (float)(a + b * trunc_normal01(seed, (uint64_t)k));
        break;
    case BF_INIT_VS_UNIFORM: {
        double limit = sqrt(3.0 * a / fan);
        for (long k = 0; k < q->n; k++) w[k] = (float)((2.0 * bf_counter_uniform(seed, (uint64_t)k) - 1.0) * limit);
        break;
    }
    case BF_INIT_VS_NORMAL: {
        double sd = sqrt(a / fan);
        for (long k = 0; k < q->n; k++) w[k] = (float)(sd * normal01(seed, (uint64_t)k));
        break;
    }
    case BF_INIT_VS_TRUNCATED_NORMAL: {
        double sd = sqrt(a / fan) / 0.87962566103423978;
        for (long k = 0; k < q->n; k++) w[k] = (float)(sd * trunc_normal01(seed, (uint64_t)k));
        break;
    }
    case BF_INIT_ORTHOGONAL: {
        long cols = q->shape[q->rank - 1], rows = q->n / cols;
        for (long k = 0; k < q->n; k++) w[k] = (float)normal01(seed, (uint64_t)k);
        /* vectors: columns when rows >= cols, else rows; element e of vector v at w[v*vs + e*es] */
        long nv = rows >= cols ? cols : rows, len = rows >= cols ? rows : cols;
        long vs = rows >= cols ? 1 : cols, es = rows >= cols ? cols : 1;
        for (long v = 0; v < nv; v++) {
            for (long u = 0; u < v; u++) {
                double d = 0.0;
                for (long e = 0; e < len; e++) d += (double)w[v * vs + e * es] * w[u * vs + e * es];
                for (long e = 0; e < len; e++) w[v * vs + e * es] -= (float)(d * w[u * vs + e * es]);
            }
            double nrm = 0.0;
            for (long e = 0; e < len; e++) nrm += (double)w[v * vs + e * es] * w[v * vs + e * es];
            nrm = nrm > 0.0 ? 1.0 / sqrt(nrm) : 0.0;
            for (long e = 0; e < len; e++) w[v * vs + e * es] = (float)(w[v * vs + e * es] * nrm);
        }
        for (long k = 0; k < q->n; k++) w[k] = (float)(w[k] * a);  /* gain */
        break;
    }
    default: memset(w, 0, sizeof(float) * (size_t)q->n); break;
    }
}

size_t bf_model_weight_bytes(const bf_model *m) {
    return bf_align_up(sizeof(float) * (size_t)(m->n_params ? m->n_params : 1));
}

/* a failed weight reservation names the largest weight (its layer's name comes first) */
static bf_status weights_refused(const bf_model *m, bf_status s) {
    const bf_param *big = NULL;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < m->layers[i].nparam && m->layers[i].share < 0; j++)
            if (!big || m->layers[i].params[j].n > big->n) big = &m->layers[i].params[j];
    if (!big) return s;
    char sh[64], why[128]; /* why: a copy, the message buffer is rewritten */
    bf_shape_str(sh, sizeof sh, big->rank, big->shape);
    snprintf(why, sizeof why, "%.127s", bf_last_error()->msg);
    return BF_FAIL(s, "the model's weights need %zu bytes, the largest %s of shape %s %zu bytes: %s", sizeof(float) *
                   (size_t)m->n_params, big->name, sh, sizeof(float) * (size_t)big->n, why);
}

/* the node of src whose parameters node i's are, checked: the same count, sizes and trainability */
static bf_status borrowed_node(const bf_model *m, const bf_model *src, const int *src_node, int i, int *k_out) {
    const bf_layer *L = &m->layers[i];
    const int k = src_node[i];
    if (k < 0 || k >= src->nlayers || src->layers[k].share >= 0 || src->layers[k].nparam != L->nparam)
        return BF_FAIL(BF_ERR_ARG, "%s: its weights are not one node's of the model it trains", L->name);
    for (int j = 0; j < L->nparam; j++) {
        const bf_param *p = &L->params[j], *q = &src->layers[k].params[j];
        if (p->n != q->n || p->trainable != q->trainable)
            return BF_FAIL(BF_ERR_ARG, "%s: %s does not match the model's %s (size or trainable)", L->name, p->name,
                           q->name);
    }
    *k_out = k;
    return BF_OK;
}

bf_status bf_model_borrow_weights(bf_model *m, const bf_model *src, const int *src_node) {
    if (src->nlayers > m->cap_tensors)
        return BF_FAIL(BF_ERR_ARG, "the model has %d nodes, more than its training graph's %d tensors", src->nlayers,
                       m->cap_tensors);
    int *used = m->work + m->cap_tensors; /* (src's nodes); the first half holds src_node (model_py.c) */
    memset(used, 0, sizeof(int) * (size_t)src->nlayers);
    int k = -1;
    for (int i = 0; i < m->nlayers; i++) { /* every check before any offset moves */
        if (m->layers[i].share >= 0 || m->layers[i].nparam == 0) continue;
        BF_TRY(borrowed_node(m, src, src_node, i, &k));
        if (used[k]) return BF_FAIL(BF_ERR_ARG, "%s: node %d's weights are taken twice", m->layers[i].name, k);
        used[k] = 1;
    }
    if (m->n_params != src->n_params || m->n_trainable != src->n_trainable) /* one-to-one: the same block */
        return BF_FAIL(BF_ERR_ARG, "the training graph has %ld weights (%ld trainable), the model %ld (%ld)",
                       m->n_params, m->n_trainable, src->n_params, src->n_trainable);
    for (int i = 0; i < m->nlayers; i++) {
        bf_layer *L = &m->layers[i];
        if (L->share >= 0) continue;
        for (int j = 0; j < L->nparam; j++) {
            const bf_param *q = &src->layers[src_node[i]].params[j];
            L->params[j].offset = q->offset;
            L->params[j].grad_offset = q->grad_offset;
        }
    }
    for (int i = 0; i < m->nlayers; i++) /* sharers follow their owner's offsets */
        if (m->layers[i].share >= 0)
            for (int j = 0; j < m->layers[i].nparam; j++) m->layers[i].params[j] = m->layers[m->layers[i].share].params[j];
    m->w = src->w;
    return BF_OK;
}

bf_status bf_model_alloc_weights(bf_model *m, size_t budget) {
    bf_arena_init(&m->weights, bf_backend_host(), "host", budget); /* the reservation checks the budget first */
    const size_t bytes = bf_model_weight_bytes(m);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes / (size_t)page > (size_t)pages) /* never mapped: with overcommit, the first
                                                                           touch would bring the OOM killer */
        return weights_refused(m, BF_FAIL(BF_ERR_NOMEM, "more than this machine's %zu bytes of memory",
                                          (size_t)pages * (size_t)page));
    bf_status s0 = bf_arena_reserve(&m->weights, bytes);
    if (s0 != BF_OK) return weights_refused(m, s0);
    void *p;
    bf_status s = bf_arena_alloc(&m->weights, bytes, &p);
    if (s != BF_OK) { bf_arena_release(&m->weights); return s; }
    m->w = p;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < m->layers[i].nparam && m->layers[i].share < 0; j++) {
            bf_param *q = &m->layers[i].params[j];
            float *w = m->w + q->offset;
            /* parameters 0..3 keep the stream they had when BF_MAX_PARAMS was 4
             * (default weights bit for bit); later ones draw from a disjoint range */
            uint64_t k = j < 4 ? (uint64_t)(i * 4 + j) : (0x5DEECE66Dull << 20) + (uint64_t)(i * BF_MAX_PARAMS + j);
            uint64_t seed = bf_splitmix64(m->seed + k);
            switch (q->init) {
            case BF_INIT_ZEROS: memset(w, 0, sizeof(float) * (size_t)q->n); break;
            case BF_INIT_ONES: for (long k = 0; k < q->n; k++) w[k] = 1.0f; break;
            case BF_INIT_GLOROT_UNIFORM: {
                float limit = sqrtf(6.0f / (q->fan_in + q->fan_out));
                for (long k = 0; k < q->n; k++) w[k] = (2.0f * bf_counter_uniform(seed, (uint64_t)k) - 1.0f) * limit;
                break;
            }
            default: init_param(w, q, seed); break;
            }
        }
    for (int i = 0; i < m->nlayers; i++) { /* kinds that set parts of their weights (LSTM unit_forget_bias) */
        const bf_layer_ops *ops = bf_layer_ops_of((int)m->layers[i].kind);
        if (ops->post_init && m->layers[i].share < 0) ops->post_init(m, i);
    }
    return BF_OK;
}

/* Ftrl's arguments in the ranges Keras allows */
static bf_status check_ftrl(const bf_optimizer *opt) {
    const bf_ftrl_args *f = &opt->ftrl;
    if (!(f->lr_power <= 0.0f))
        return BF_FAIL(BF_ERR_ARG, "learning_rate_power must be <= 0, got %g", (double)f->lr_power);
    if (!(opt->initial_accumulator >= 0.0f))
        return BF_FAIL(BF_ERR_ARG, "initial_accumulator_value must be >= 0, got %g", (double)opt->initial_accumulator);
    const float v[4] = {f->l1, f->l2, f->l2_shrinkage, f->beta};
    static const char *const names[4] = {"l1_regularization_strength", "l2_regularization_strength",
                                         "l2_shrinkage_regularization_strength", "beta"};
    for (int k = 0; k < 4; k++)
        if (!(v[k] >= 0.0f && v[k] < INFINITY)) return BF_FAIL(BF_ERR_ARG, "%s must be >= 0, got %g", names[k], (double)v[k]);
    return BF_OK;
}

bf_status bf_model_compile(bf_model *m, const bf_optimizer *opt, const bf_loss *loss, const bf_output *outs) {
    int nslots = 0;
    switch (opt->kind) {
    case BF_OPT_SGD: nslots = opt->momentum != 0.0f ? 1 : 0; break;
    case BF_OPT_ADAM: case BF_OPT_ADAMW: nslots = opt->amsgrad ? 3 : 2; break;
    case BF_OPT_RMSPROP: nslots = 1 + (opt->momentum > 0.0f) + (opt->centered != 0); break;
    case BF_OPT_ADAGRAD: nslots = 1; break;
    case BF_OPT_NADAM: case BF_OPT_ADAMAX: case BF_OPT_ADADELTA: case BF_OPT_FTRL: case BF_OPT_LAMB: nslots = 2; break;
    case BF_OPT_LION: nslots = 1; break;
    case BF_OPT_ADAFACTOR: nslots = 3; break;
    case BF_OPT_MUON: nslots = 2; break;
    default: return BF_FAIL(BF_ERR_ARG, "optimizer: unknown optimizer kind %d", (int)opt->kind);
    }
    if (opt->acc_steps < 0 || opt->acc_steps == 1)
        return BF_FAIL(BF_ERR_ARG, "gradient_accumulation_steps must be an integer >= 2, got %ld", opt->acc_steps);
    if (opt->loss_scale_factor < 0.0f || !(opt->loss_scale_factor < INFINITY))
        return BF_FAIL(BF_ERR_ARG, "loss_scale_factor must be a finite number > 0 or None, got %g",
                       (double)opt->loss_scale_factor);
    if (opt->growth_steps && (opt->acc_steps || opt->loss_scale_factor > 0.0f))
        return BF_FAIL(BF_ERR_ARG, "LossScaleOptimizer: its inner optimizer's %s is not supported by boundfit; "
                       "leave it None under a LossScaleOptimizer",
                       opt->acc_steps ? "gradient_accumulation_steps" : "loss_scale_factor");
    if (opt->kind == BF_OPT_MUON && !(opt->mu.ns_steps >= 0 && opt->mu.adam_weight_decay >= 0.0f))
        return BF_FAIL(BF_ERR_ARG, "Muon: ns_steps and adam_weight_decay must be >= 0, got %d and %g", opt->mu.ns_steps,
                       (double)opt->mu.adam_weight_decay);
    if (opt->kind == BF_OPT_ADAFACTOR && !(opt->af.clip_threshold > 0.0f))
        return BF_FAIL(BF_ERR_ARG, "Adafactor: clip_threshold must be > 0, got %g", (double)opt->af.clip_threshold);
    nslots += opt->acc_steps != 0;
    if (opt->use_ema && !(opt->ema_momentum >= 0.0f && opt->ema_momentum <= 1.0f))
        return BF_FAIL(BF_ERR_ARG, "ema_momentum must be in [0, 1], got %g", (double)opt->ema_momentum);
    if (opt->ema_overwrite_frequency < 0)
        return BF_FAIL(BF_ERR_ARG, "ema_overwrite_frequency must be >= 1 or None, got %ld", opt->ema_overwrite_frequency);
    nslots += opt->use_ema != 0;
    if (!(opt->lr >= 0.0f)) return BF_FAIL(BF_ERR_ARG, "learning_rate must be >= 0, got %g", (double)opt->lr);
    if (opt->kind == BF_OPT_FTRL) BF_TRY(check_ftrl(opt));
    if (!(opt->weight_decay >= 0.0f)) return BF_FAIL(BF_ERR_ARG, "weight_decay must be >= 0, got %g", (double)opt->weight_decay);
    if (opt->growth_steps < 0 || (opt->growth_steps && !(opt->loss_scale > 0.0f && opt->loss_scale < INFINITY)))
        return BF_FAIL(BF_ERR_ARG, "LossScaleOptimizer: initial_scale must be a finite number > 0 and "
                       "dynamic_growth_steps >= 1, got %g and %ld", (double)opt->loss_scale, opt->growth_steps);
    if ((int)opt->clip < 0 || opt->clip > BF_CLIP_VALUE || (opt->clip != BF_CLIP_NONE && !(opt->clip_value > 0.0f)))
        return BF_FAIL(BF_ERR_ARG, "gradient clipping: mode %d with value %g (must be > 0)", (int)opt->clip, (double)opt->clip_value);
    bf_output o[BF_MAX_OUTPUTS];
    long y_row = 0;
    for (int k = 0; k < m->n_outputs; k++) {
        if (outs) o[k] = outs[k];
        else { o[k].loss = *loss; o[k].weight = 1.0f; }
        const bf_loss *l = &o[k].loss;
        if ((int)l->kind < 0 || l->kind > BF_LOSS_LAST) return BF_FAIL(BF_ERR_ARG, "loss: unknown loss kind %d (output %d)", (int)l->kind, k);
        if (!(l->label_smoothing >= 0.0f && l->label_smoothing <= 1.0f))
            return BF_FAIL(BF_ERR_ARG, "label_smoothing must be in [0, 1], got %g (output %d)", (double)l->label_smoothing, k);
        if (l->kind == BF_LOSS_HUBER && !(l->delta > 0.0f))
            return BF_FAIL(BF_ERR_ARG, "delta must be > 0 for the Huber loss, got %g (output %d)", (double)l->delta, k);
        if (!(o[k].weight >= 0.0f)) return BF_FAIL(BF_ERR_ARG, "loss_weights[%d] must be >= 0, got %g", k, (double)o[k].weight);
        o[k].y_off = y_row;
        o[k].y_row = l->kind == BF_LOSS_SCCE ? bf_seq_out_positions(m, k) : m->t_size[m->out_t[k]]; /* ids per position */
        y_row += o[k].y_row;
    }
    /* state is created (and budget-checked) by the first training run */
    bf_arena_release(&m->opt_state);
    m->slots = NULL;
    m->opt = *opt;
    m->opt.nslots = nslots;
    m->opt.iterations = 0;
    m->opt.acc_count = 0;
    m->opt.u_product = 1.0f;
    m->opt.u_product_it = 0;
    m->opt.scale_counter = 0;
    memcpy(m->outs, o, sizeof o[0] * (size_t)m->n_outputs);
    m->loss = o[0].loss;
    m->y_row = y_row;
    m->nmetrics = 0;
    m->compiled = 1;
    return BF_OK;
}

bf_status bf_model_set_matrices(bf_model *m, const long *grad_offsets, int n) {
    for (int k = 0; k < n; k++) {
        int found = 0;
        for (int i = 0; i < m->nlayers && !found; i++)
            for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) {
                const bf_param *p = &m->layers[i].params[j];
                if (p->trainable && (long)p->grad_offset == grad_offsets[k] && p->rank == 2) found = 1;
            }
        if (!found)
            return BF_FAIL(BF_ERR_ARG, "Muon: gradient offset %ld is not a trainable rank-2 variable", grad_offsets[k]);
    }
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < m->layers[i].nparam; j++) {
            bf_param *p = &m->layers[i].params[j];
            p->matrix = 0;
            for (int k = 0; k < n && p->trainable && m->layers[i].share < 0; k++)
                if ((long)p->grad_offset == grad_offsets[k]) p->matrix = 1;
        }
    return BF_OK;
}

size_t bf_model_opt_state_bytes(const bf_model *m) {
    return bf_align_up(sizeof(float) * (size_t)m->opt.nslots * (size_t)m->n_trainable);
}

bf_status bf_model_alloc_opt_state(bf_model *m) {
    size_t bytes = bf_model_opt_state_bytes(m);
    if (m->slots || bytes == 0) return BF_OK;
    bf_arena_init(&m->opt_state, bf_backend_host(), "host", 0);
    BF_TRY(bf_arena_reserve(&m->opt_state, bytes));
    void *p;
    bf_status s = bf_arena_alloc(&m->opt_state, bytes, &p);
    if (s != BF_OK) { bf_arena_release(&m->opt_state); return s; }
    memset(p, 0, bytes);
    m->slots = p;
    if (m->opt.kind == BF_OPT_ADAGRAD || m->opt.kind == BF_OPT_FTRL) /* slot 0: the accumulator */
        for (long i = 0; i < m->n_trainable; i++) m->slots[i] = m->opt.initial_accumulator;
    return BF_OK;
}

bf_status bf_model_ema(bf_model *m, bf_ema_op op) {
    if (!m->compiled || !m->opt.use_ema) return BF_FAIL(BF_ERR_ARG, "the optimizer has no moving average: set use_ema=True");
    if (!m->slots) return BF_FAIL(BF_ERR_ARG, "the optimizer's moving average does not exist before its first update");
    const long n = m->n_trainable;
    float *avg = m->slots + (size_t)(m->opt.nslots - 1) * (size_t)n, *w = m->w;
    for (long i = 0; i < n; i++) {
        const float a = avg[i];
        if (op != BF_EMA_TO_WEIGHTS) avg[i] = w[i];
        if (op != BF_EMA_FROM_WEIGHTS) w[i] = a;
    }
    return BF_OK;
}

void bf_model_free(bf_model *m) {
    bf_arena_release(&m->weights);
    bf_arena_release(&m->opt_state);
    m->w = m->slots = NULL;
    bf_model_tables_free(m);
}

int bf_model_loss_fused(const bf_model *m, int k) {
    int t = m->out_t[k], i = bf_model_producer(m, t);
    const bf_loss *loss = &m->outs[k].loss;
    if (i < 0 || m->t_uses[t] > 0 || loss->from_logits) return 0;
    const bf_layer *L = &m->layers[i];
    if (!(bf_layer_ops_of((int)L->kind)->flags & BF_LF_FUSABLE)) return 0;
    if (L->act == BF_ACT_SIGMOID && loss->kind == BF_LOSS_BCE) return 1;
    if (L->act == BF_ACT_SOFTMAX && (loss->kind == BF_LOSS_CCE || loss->kind == BF_LOSS_SCCE)) return 1;
    return 0;
}

long bf_model_out_size(const bf_model *m) { return m->pred_row; }

static int sparse_metric(bf_metric_kind k) { return k == BF_MET_SPARSE_CAT_ACC || k == BF_MET_SPARSE_TOPK; }

bf_status bf_model_set_metrics(bf_model *m, const bf_metric_spec *metrics, int n) {
    if (n < 0 || n > BF_MAX_METRICS) return BF_FAIL(BF_ERR_ARG, "metrics: at most %d metrics, got %d", BF_MAX_METRICS, n);
    for (int i = 0; i < n; i++) {
        const bf_metric_spec *q = &metrics[i];
        if ((int)q->kind < 0 || q->kind > BF_MET_LAST) return BF_FAIL(BF_ERR_ARG, "metrics[%d]: unknown metric kind %d", i, (int)q->kind);
        if (q->output < 0 || q->output >= m->n_outputs)
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: output %d, the model has %d", i, q->output, m->n_outputs);
        const long C = m->t_size[m->out_t[q->output]] / bf_seq_out_positions(m, q->output); /* per position */
        const int sparse_y = m->outs[q->output].loss.kind == BF_LOSS_SCCE;
        if (sparse_metric(q->kind) && !sparse_y && C > 1)
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: a sparse metric needs class-id targets (loss sparse_categorical_crossentropy)", i);
        if (!sparse_metric(q->kind) && sparse_y)
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: this metric needs targets shaped as the output (%ld values per sample), "
                           "the loss sparse_categorical_crossentropy takes class ids; use a sparse_* metric", i, C);
        if ((q->kind == BF_MET_TOPK || q->kind == BF_MET_SPARSE_TOPK) && q->k < 1)
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: k must be >= 1, got %d", i, q->k);
        if (bf_metric_bucketed(q->kind) && (q->num_thresholds < 2 || q->num_thresholds > BF_AUC_MAX_THRESHOLDS))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: num_thresholds must be in [2, %d], got %d", i, BF_AUC_MAX_THRESHOLDS, q->num_thresholds);
        if (q->batch_mean && !(q->kind == BF_MET_MAE || q->kind == BF_MET_MSE))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: a mean of batch means applies to MAE and MSE", i);
        if (q->has_class_id && !(q->kind == BF_MET_PRECISION || q->kind == BF_MET_RECALL ||
                                  (q->kind >= BF_MET_PREC_AT_REC && q->kind <= BF_MET_SPEC_AT_SENS)))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: class_id applies to precision, recall and the *At* metrics", i);
        if (q->has_class_id && (q->class_id < 0 || q->class_id >= C))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: class_id %d is out of range for an output of %ld values per "
                           "sample", i, q->class_id, C);
        if (q->kind == BF_MET_SUMS && (bf_seq_out_positions(m, q->output) != 1 || q->col0 < 0 || q->ncols < 0 ||
                                       q->col0 + (long)q->ncols > C || C - q->col0 < 1 || C > BF_MAX_SUM_COLS))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: sums of columns [%d, %d + %d) of an output of one position and "
                           "%ld values per sample (at most %d)", i, q->col0, q->col0, q->ncols, C, BF_MAX_SUM_COLS);
        if (bf_metric_bucketed(q->kind) && !(q->value >= 0.0f && q->value <= 1.0f))
            return BF_FAIL(BF_ERR_ARG, "metrics[%d]: value must be in [0, 1], got %g", i, (double)q->value);
    }
    for (int i = 0; i < n; i++) {
        m->metrics[i] = metrics[i];
        if (metrics[i].kind == BF_MET_SUMS && metrics[i].ncols == 0) /* to the output's last column */
            m->metrics[i].ncols = (int)(m->t_size[m->out_t[metrics[i].output]] - metrics[i].col0);
    }
    m->nmetrics = n;
    return BF_OK;
}

static double div0(double a, double b) { return b != 0.0 ? a / b : 0.0; }
static float div0f(double a, double b) { return b != 0.0 ? (float)a / (float)b : 0.0f; }

/* Keras's SensitivitySpecificityBase: at threshold i, tp / fp = the positives
 * / negatives of buckets >= i, fn = P - tp, tn = N - fp; the largest dependent
 * statistic among the thresholds whose constrained one is >= value, else 0.
 * Ratios in float32 as Keras compares them. */
static double at_constraint(const bf_metric_spec *m, const double *acc) {
    const int T = m->num_thresholds;
    const double *bp = acc, *bn = acc + T;
    double P = 0.0, N = 0.0;
    for (int i = 0; i < T; i++) { P += bp[i]; N += bn[i]; }
    double tp = P, fp = N;
    float best = 0.0f;
    for (int i = 0; i < T; i++) {
        if (i > 0) { tp -= bp[i - 1]; fp -= bn[i - 1]; }
        const double fn = P - tp, tn = N - fp;
        const float rec = div0f(tp, tp + fn), prec = div0f(tp, tp + fp), spec = div0f(tn, tn + fp);
        float con, dep;
        switch (m->kind) {
        case BF_MET_PREC_AT_REC: con = rec; dep = prec; break;
        case BF_MET_REC_AT_PREC: con = prec; dep = rec; break;
        case BF_MET_SENS_AT_SPEC: con = spec; dep = rec; break;
        default: con = rec; dep = spec; break; /* SPEC_AT_SENS */
        }
        if (con >= m->value && dep > best) best = dep;
    }
    return best;
}

double bf_metric_result(const bf_metric_spec *m, const double *acc) {
    switch (m->kind) {
    case BF_MET_RMSE: return sqrt(div0(acc[0], acc[1]));
    case BF_MET_PRECISION: return div0(acc[0], acc[0] + acc[1]);
    case BF_MET_RECALL: return div0(acc[0], acc[0] + acc[2]);
    case BF_MET_TP: return acc[0];
    case BF_MET_FP: return acc[1];
    case BF_MET_FN: return acc[2];
    case BF_MET_TN: return acc[3];
    case BF_MET_PREC_AT_REC:
    case BF_MET_REC_AT_PREC:
    case BF_MET_SENS_AT_SPEC:
    case BF_MET_SPEC_AT_SENS: return at_constraint(m, acc);
    case BF_MET_SUMS: return div0(acc[0], acc[m->ncols]);
    case BF_MET_AUC: {
        /* Keras AUC (ROC, interpolation): tp/fp at threshold i = sums of buckets >= i */
        const int T = m->num_thresholds;
        const double *bp = acc, *bn = acc + T;
        double P = 0.0, N = 0.0;
        for (int i = 0; i < T; i++) { P += bp[i]; N += bn[i]; }
        double tp = P, fp = N, auc = 0.0;
        double prev_r = div0(tp, P), prev_f = div0(fp, N);
        for (int i = 1; i < T; i++) {
            tp -= bp[i - 1];
            fp -= bn[i - 1];
            double rec = div0(tp, P), fpr = div0(fp, N);
            auc += (prev_f - fpr) * (prev_r + rec) / 2.0;
            prev_r = rec;
            prev_f = fpr;
        }
        return auc;
    }
    default: return div0(acc[0], acc[1]);
    }
}

int bf_seq_out_positions(const bf_model *m, int k) {
    const int t = m->out_t[k], rank = m->t_rank[t];
    if (rank < 2) return 1;
    const int C = m->t_shape[t][rank - 1];
    return C > 0 ? (int)(m->t_size[t] / C) : 1;
}

int bf_model_batch_node(const bf_model *m) {
    for (int i = 0; i < m->nlayers; i++) {
        const bf_layer_ops *ops = bf_layer_ops_of((int)m->layers[i].kind);
        if (ops && (ops->flags & BF_LF_BATCH)) return i;
    }
    return -1;
}
