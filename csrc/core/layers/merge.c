/* merge.c - Add, Subtract, Multiply, Average, Maximum, Minimum (several
 * inputs of one shape, elementwise through the backend's ewise) and
 * Concatenate (equal shapes but on its axis, bf_concat_cfg; column blocks
 * through copy2d). */
#include "layer.h"

static bf_status concat_parse(bf_layer *L, const bf_spec *s) { return bf_spec_int(s, "axis", 0, &L->cfg.concat.axis); }

static bf_status infer(bf_layer *L, int rank, const int *shape) {
    (void)L;
    (void)rank;
    (void)shape;
    return BF_OK; /* the output shape is the first input's (Concatenate's: check) */
}

/* the inputs agree (Concatenate: but on its axis); sets the output shape */
static bf_status check(bf_model *m, int i) {
    bf_layer *L = &m->layers[i];
    int t0 = L->in_ids[0], r = m->t_rank[t0];
    const int concat = L->kind == BF_L_CONCAT, axis = concat ? L->cfg.concat.axis : -1;
    if (L->nin < 2 || (L->kind == BF_L_SUBTRACT && L->nin != 2))
        return BF_FAIL(BF_ERR_ARG, "%s: %s inputs, got %d", L->name,
                       L->kind == BF_L_SUBTRACT ? "Subtract needs exactly 2" : "a merge layer needs at least 2", L->nin);
    if (concat && (axis < 0 || axis >= r))
        return BF_FAIL(BF_ERR_ARG, "%s: axis %d is out of range for inputs of rank %d (excluding the batch axis)",
                       L->name, axis + 1, r);
    long long sum = 0;
    for (int j = 0; j < L->nin; j++) {
        int t = L->in_ids[j], ok = m->t_rank[t] == r;
        for (int d = 0; ok && d < r; d++) ok = m->t_shape[t][d] == m->t_shape[t0][d] || (concat && d == axis);
        if (!ok) {
            char a[48], b[48];
            bf_shape_str(a, sizeof a, r, m->t_shape[t0]);
            bf_shape_str(b, sizeof b, m->t_rank[t], m->t_shape[t]);
            return BF_FAIL(BF_ERR_SHAPE, "%s: inputs must have the same shape%s; input 0 has %s, input %d has %s",
                           L->name, concat ? " except on the concatenation axis" : "", a, j, b);
        }
        if (concat) sum += m->t_shape[t][axis];
    }
    return concat ? bf_out_dim(L, sum, &L->out_shape[axis]) : BF_OK;
}

/* the one Embedding mask the inputs carry (two different ones: refused) */
static bf_status mask(const bf_model *m, int i, int *mask) {
    const bf_layer *L = &m->layers[i];
    *mask = -1;
    for (int j = 0; j < L->nin; j++) {
        int k = m->t_mask[L->in_ids[j]];
        if (k < 0 || k == *mask) continue;
        if (*mask >= 0)
            return BF_FAIL(BF_ERR_ARG, "%s: its inputs carry the masks of two Embedding layers ('%s', '%s'); "
                           "combining masks is not supported", L->name, m->layers[*mask].name, m->layers[k].name);
        *mask = k;
    }
    if (*mask >= 0 && L->kind == BF_L_CONCAT && L->cfg.concat.axis != L->in_rank - 1)
        return BF_FAIL(BF_ERR_ARG, "%s: a masked sequence can only be concatenated on the last axis", L->name);
    return BF_OK;
}

static int ewise_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->ewise != NULL;
}

static int copy_supported(const bf_backend *be, const bf_layer *L) {
    (void)L;
    return be->copy2d != NULL;
}

static bf_status ewise_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    float *out = bf_step_out(r, i);
    long n = (long)rows * L->out_size;
    bf_ewise_op op = L->kind == BF_L_SUBTRACT ? BF_EW_SUB : L->kind == BF_L_MULTIPLY ? BF_EW_MUL :
                     L->kind == BF_L_MAXIMUM ? BF_EW_MAX : L->kind == BF_L_MINIMUM ? BF_EW_MIN : BF_EW_ADD;
    for (int j = 1; j < L->nin; j++) {
        float alpha = L->kind == BF_L_AVERAGE && L->nin == 2 ? 0.5f : 1.0f;
        BF_TRY(be->ewise(be, out, j == 1 ? bf_step_tensor(r, L->in_ids[0]) : out, bf_step_tensor(r, L->in_ids[j]),
                         NULL, op, alpha, n));
    }
    if (L->kind == BF_L_AVERAGE && L->nin > 2)
        BF_TRY(be->ewise(be, out, out, NULL, NULL, BF_EW_SCALE, 1.0f / (float)L->nin, n));
    return BF_OK;
}

/* d inputs (rows, in size) from the output gradient dout */
static bf_status ewise_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    long n = (long)rows * L->out_size;
    (void)din;
    for (int j = 0; j < L->nin; j++) {
        float *d = bf_step_din(r, i, j);
        if (!d) continue;
        switch (L->kind) {
        case BF_L_ADD: BF_TRY(be->ewise(be, d, dout, NULL, NULL, BF_EW_SCALE, 1.0f, n)); break;
        case BF_L_AVERAGE: BF_TRY(be->ewise(be, d, dout, NULL, NULL, BF_EW_SCALE, 1.0f / (float)L->nin, n)); break;
        case BF_L_SUBTRACT: BF_TRY(be->ewise(be, d, dout, NULL, NULL, BF_EW_SCALE, j ? -1.0f : 1.0f, n)); break;
        case BF_L_MULTIPLY: {
            int first = 1;
            for (int k = 0; k < L->nin; k++)
                if (k != j) {
                    BF_TRY(be->ewise(be, d, first ? dout : d, bf_step_tensor(r, L->in_ids[k]), NULL, BF_EW_MUL, 1.0f, n));
                    first = 0;
                }
            break;
        }
        default: /* Maximum, Minimum: where this input won */
            BF_TRY(be->ewise(be, d, bf_step_tensor(r, L->in_ids[j]), bf_step_out(r, i), dout, BF_EW_SELECT, 1.0f, n));
            break;
        }
    }
    return BF_OK;
}

/* Concatenate as column blocks: rows (R) = batch x the axes before its axis */
static long concat_rows(const bf_layer *L, int rows) {
    long R = rows;
    for (int d = 0; d < L->cfg.concat.axis; d++) R *= L->out_shape[d];
    return R;
}

static bf_status concat_forward(bf_run *r, int i, int rows) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    float *out = bf_step_out(r, i);
    long n = (long)rows * L->out_size, R = concat_rows(L, rows), Ct = n / R, off = 0;
    for (int j = 0; j < L->nin; j++) {
        long Cj = (long)rows * r->m->t_size[L->in_ids[j]] / R;
        BF_TRY(be->copy2d(be, out + off, Ct, bf_step_tensor(r, L->in_ids[j]), Cj, R, Cj));
        off += Cj;
    }
    return BF_OK;
}

static bf_status concat_backward(bf_run *r, int i, int rows, float *din, float *dout) {
    bf_backend *be = r->be;
    const bf_layer *L = &r->m->layers[i];
    long n = (long)rows * L->out_size, R = concat_rows(L, rows), off = 0;
    (void)din;
    for (int j = 0; j < L->nin; j++) {
        float *d = bf_step_din(r, i, j);
        long Cj = (long)rows * r->m->t_size[L->in_ids[j]] / R;
        if (d) BF_TRY(be->copy2d(be, d, Cj, dout + off, n / R, R, Cj));
        off += Cj;
    }
    return BF_OK;
}

#define EWISE_OPS(KIND, FLAGS)                                                                                     \
    const bf_layer_ops bf_ops_##KIND = {                                                                           \
        .name = #KIND, .flags = BF_LF_MULTI_IN | BF_LF_ANY_RANK | BF_LF_ROWS | (FLAGS), .infer = infer, .check = check, .mask = mask,            \
        .supported = ewise_supported, .forward = ewise_forward, .backward = ewise_backward,                        \
    };
EWISE_OPS(ADD, BF_LF_SCALAR)
EWISE_OPS(SUBTRACT, BF_LF_SCALAR)
EWISE_OPS(MULTIPLY, BF_LF_READS_IN | BF_LF_SCALAR)
EWISE_OPS(AVERAGE, BF_LF_SCALAR)
EWISE_OPS(MAXIMUM, BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR)
EWISE_OPS(MINIMUM, BF_LF_READS_IN | BF_LF_READS_OUT | BF_LF_SCALAR)
#undef EWISE_OPS

const bf_layer_ops bf_ops_CONCAT = {
    .name = "CONCAT",
    .flags = BF_LF_MULTI_IN | BF_LF_ANY_RANK,
    .parse = concat_parse,
    .infer = infer,
    .check = check,
    .mask = mask,
    .supported = copy_supported,
    .forward = concat_forward,
    .backward = concat_backward,
};
