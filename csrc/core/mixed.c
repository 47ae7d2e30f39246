/* mixed.c - mixed precision in a step (mixed_bfloat16; docs/mixed-precision.md).
 * A node under the policy (bf_layer.bf16) stores its output in bfloat16 when
 * its kind allows (BF_LF_ROWS / BF_LF_OUT16) and the output is no model output
 * (the losses, metrics and predictions read float32: its values are rounded
 * to bfloat16's there). A tensor's gradient has its values' storage. A node
 * that reads or writes bfloat16, or computes under the policy, runs here:
 * each chunk of rows of its inputs is expanded (bfloat16) or rounded (a
 * float32 input of a bfloat16 node: Keras casts it) into a float32 conversion
 * buffer, the kind's own float32 step runs on the chunk (bf_step_* return the
 * chunk's pointers while r->cv_on), and its output / input gradients are
 * rounded back on store (round to nearest even). Kinds with BF_LF_ROWS run in
 * chunks of at most BF_CV_CHUNK bytes a tensor, the others on the whole
 * micro-batch, so every kind runs under the policy and the conversion
 * buffers stay small where it matters. Sums inside the kernels stay float32. */
#include "mixed.h"

#include "bufs.h"
#include "layer_registry.h"
#include "step_bufs.h"

#define BF_CV_CHUNK ((size_t)64 << 20) /* float32 bytes of one tensor's chunk, at most (ROWS kinds) */

static unsigned flags_of(const bf_run *r, int i) { return bf_layer_node_flags(r, i); }

static int reads_input(const bf_run *r, int i, int j) {
    const bf_layer_ops *ops = bf_layer_ops_of((int)r->m->layers[i].kind);
    return !ops->view_in || ops->view_in(r, i) == j;
}

static int is_model_output(const bf_model *m, int t) {
    for (int k = 0; k < m->n_outputs; k++)
        if (m->out_t[k] == t) return 1;
    return 0;
}

/* input u of node i needs a float32 copy of its chunk (else the kernel reads its rows where they are) */
static int input_copied(const bf_run *r, int i, int u) { return r->t16[u] || r->m->layers[i].bf16; }

/* the chunk's float32 view of tensor u (input of node i): copied into *p, or its own rows */
static bf_status load(bf_run *r, int i, int u, long r0, int n, float **p, int copy) {
    const long sz = r->m->t_size[u];
    if (r->cv_t[u]) return BF_OK; /* read twice */
    if (!input_copied(r, i, u)) {
        r->cv_t[u] = bf_step_tensor(r, u) + r0 * sz;
        return BF_OK;
    }
    r->cv_t[u] = *p;
    *p += (size_t)r->cv_rows[i] * sz;
    if (!copy) return BF_OK;
    if (r->t16[u])
        return r->be->bf16_convert(r->be, r->cv_t[u], (uint16_t *)(void *)BF_BUF(r, r->t_buf[u]) + r0 * sz,
                                   BF_BF16_EXPAND, (long)n * sz);
    return r->be->bf16_convert(r->be, r->cv_t[u], bf_step_tensor(r, u) + r0 * sz, BF_BF16_ROUND_F32, (long)n * sz);
}

/* floats of node i's conversion buffer: forward (back = 0) or backward, per chunk of c rows */
static size_t cv_floats(const bf_run *r, int i, int back) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const int o = m->n_inputs + i;
    unsigned char seen[BF_MAX_TENSORS] = {0};
    size_t f = 0;
    if (!back || (r->cv[i] & BF_CV_READS_IN))
        for (int j = 0; j < L->nin; j++) {
            int u = L->in_ids[j];
            if (!reads_input(r, i, j) || seen[u] || !input_copied(r, i, u)) continue;
            seen[u] = 1;
            f += (size_t)m->t_size[u];
        }
    if (r->t16[o]) f += (size_t)L->out_size * (back ? 1 + ((r->cv[i] & BF_CV_READS_OUT) != 0) : 1);
    if (back)
        for (int j = 0; j < L->nin; j++)
            if (r->gtmp[bf_model_edge(m, i, j)] != -3 && r->t16[L->in_ids[j]]) f += (size_t)m->t_size[L->in_ids[j]];
    return f * (size_t)r->cv_rows[i];
}

bf_status bf_mixed_plan_forward(bf_run *r, int i, int t) {
    bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const int o = m->n_inputs + i;
    const unsigned f = flags_of(r, i);
    r->cv[i] = 0;
    r->cv_fw[i] = r->cv_bw[i] = -2;
    if (r->node_view[i]) { /* its output is its input's buffer */
        r->t16[o] = r->t16[L->in_ids[0]];
        const bf_layer_ops *vo = bf_layer_ops_of((int)L->kind);
        if (vo->view_in) r->t16[o] = r->t16[L->in_ids[vo->view_in(r, i)]];
        return BF_OK;
    }
    r->t16[o] = L->bf16 && (f & (BF_LF_ROWS | BF_LF_OUT16)) && !is_model_output(m, o);
    int on = L->bf16;
    size_t widest = (size_t)L->out_size;
    for (int j = 0; j < L->nin; j++)
        if (reads_input(r, i, j)) {
            on |= r->t16[L->in_ids[j]];
            if ((size_t)m->t_size[L->in_ids[j]] > widest) widest = (size_t)m->t_size[L->in_ids[j]];
        }
    if (!on) return BF_OK;
    if (!r->be->bf16_convert)
        return BF_FAIL(BF_ERR_ARG, "mixed precision on %s: not yet (layer '%s' is under mixed_bfloat16; it runs on "
                       "the CPU, or use the float32 policy on this device)", r->be->name, L->name);
    r->cv[i] = BF_CV_ON;
    long c = r->B;
    if (f & BF_LF_ROWS) {
        size_t rows = BF_CV_CHUNK / (widest * sizeof(float));
        c = rows < 1 ? 1 : rows < (size_t)r->B ? (long)rows : r->B;
    }
    r->cv_rows[i] = (int)c;
    size_t fl = cv_floats(r, i, 0);
    if (!fl) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->cv_fw[i], fl * sizeof(float), BF_BUF_WORKSPACE, L->name,
                         " float32 conversion (mixed precision)"));
    bf_run_use(r, r->cv_fw[i], t);
    return BF_OK;
}

bf_status bf_mixed_plan_backward(bf_run *r, int i, int tb) {
    size_t fl = cv_floats(r, i, 1);
    if (!fl) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->cv_bw[i], fl * sizeof(float), BF_BUF_WORKSPACE, r->m->layers[i].name,
                         " float32 conversion, backward (mixed precision)"));
    bf_run_use(r, r->cv_bw[i], tb);
    return BF_OK;
}

static void clear(bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    r->cv_on = 0;
    r->cv_t[r->m->n_inputs + i] = NULL;
    for (int j = 0; j < L->nin; j++) r->cv_t[L->in_ids[j]] = NULL;
}

/* the rows [r0, r0 + n) of a float32 result: into bfloat16 storage, or rounded in place under the policy */
static bf_status store(bf_run *r, int i, int t16, float *f32, void *dst, long n) {
    if (t16) return r->be->bf16_convert(r->be, dst, f32, BF_BF16_ROUND, n);
    return r->m->layers[i].bf16 ? r->be->bf16_convert(r->be, f32, f32, BF_BF16_ROUND_F32, n) : BF_OK;
}

bf_status bf_mixed_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    const int o = r->m->n_inputs + i;
    const long osz = L->out_size;
    for (long r0 = 0; r0 < rows; r0 += r->cv_rows[i]) {
        const int n = (int)(rows - r0 < r->cv_rows[i] ? rows - r0 : r->cv_rows[i]);
        float *p = bf_step_buf(r, r->cv_fw[i]);
        bf_status s = BF_OK;
        for (int j = 0; j < L->nin && s == BF_OK; j++)
            if (reads_input(r, i, j)) s = load(r, i, L->in_ids[j], r0, n, &p, 1);
        void *dst = BF_BUF(r, r->t_buf[o]);
        if (r->t16[o]) { r->cv_t[o] = p; dst = (uint16_t *)dst + r0 * osz; }
        else r->cv_t[o] = (float *)dst + r0 * osz;
        r->cv_on = i + 1;
        r->cv_row0 = r0;
        if (s == BF_OK) s = ops->forward(r, i, n);
        float *res = r->cv_t[o];
        clear(r, i);
        BF_TRY(s);
        BF_TRY(store(r, i, r->t16[o], res, dst, (long)n * osz));
    }
    return BF_OK;
}

/* input j's gradient for the chunk: where the kernel writes it, and where it goes after */
static float *din_of(bf_run *r, int i, int j, long r0, float **p, void **dst) {
    const bf_model *m = r->m;
    const int g = r->gtmp[bf_model_edge(m, i, j)], u = m->layers[i].in_ids[j];
    const long sz = m->t_size[u];
    *dst = NULL;
    if (g == -3) return NULL;
    char *buf = (char *)BF_BUF(r, g == -2 ? r->t_grad[u] : g);
    if (!r->t16[u]) return (float *)buf + r0 * sz;
    *dst = (uint16_t *)(void *)buf + r0 * sz;
    float *w = *p;
    *p += (size_t)r->cv_rows[i] * sz;
    return w;
}

bf_status bf_mixed_backward(bf_run *r, int i, int rows) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    const int o = m->n_inputs + i;
    const long osz = L->out_size;
    void *dsts[BF_MAX_NODE_IN];
    for (long r0 = 0; r0 < rows; r0 += r->cv_rows[i]) {
        const int n = (int)(rows - r0 < r->cv_rows[i] ? rows - r0 : r->cv_rows[i]);
        float *p = bf_step_buf(r, r->cv_bw[i]), *dout;
        char *g = (char *)BF_BUF(r, r->t_grad[o]);
        bf_status s;
        if (r->t16[o]) {
            dout = p;
            p += (size_t)r->cv_rows[i] * osz;
            s = r->be->bf16_convert(r->be, dout, (uint16_t *)(void *)g + r0 * osz, BF_BF16_EXPAND, (long)n * osz);
        } else { /* a float32 output: under the policy its gradient is a bfloat16 one, as Keras's cast makes it */
            dout = (float *)g + r0 * osz;
            s = store(r, i, 0, dout, NULL, (long)n * osz);
        }
        for (int j = 0; j < L->nin && s == BF_OK && (r->cv[i] & BF_CV_READS_IN); j++)
            if (reads_input(r, i, j)) s = load(r, i, L->in_ids[j], r0, n, &p, 1);
        if (r->t16[o] && (r->cv[i] & BF_CV_READS_OUT) && s == BF_OK) {
            r->cv_t[o] = p;
            p += (size_t)r->cv_rows[i] * osz;
            s = r->be->bf16_convert(r->be, r->cv_t[o], (uint16_t *)(void *)BF_BUF(r, r->t_buf[o]) + r0 * osz,
                                    BF_BF16_EXPAND, (long)n * osz);
        } else if (!r->t16[o]) {
            r->cv_t[o] = (float *)BF_BUF(r, r->t_buf[o]) + r0 * osz;
        }
        for (int j = 0; j < L->nin; j++) r->cv_din[j] = din_of(r, i, j, r0, &p, &dsts[j]);
        r->cv_on = i + 1;
        r->cv_row0 = r0;
        if (s == BF_OK) s = ops->backward(r, i, n, r->cv_din[0], dout);
        clear(r, i);
        BF_TRY(s);
        for (int j = 0; j < L->nin; j++) {
            if (!r->cv_din[j]) continue;
            const long k = (long)n * m->t_size[L->in_ids[j]];
            BF_TRY(store(r, i, dsts[j] != NULL, r->cv_din[j], dsts[j], k));
        }
    }
    return BF_OK;
}

bf_status bf_mixed_accumulate(bf_run *r, int u, void *grad, const void *tmp, long n) {
    if (r->t16[u]) return r->be->bf16_convert(r->be, grad, tmp, BF_BF16_ADD16, n);
    return r->be->ewise(r->be, grad, grad, tmp, NULL, BF_EW_ADD, 1.0f, n);
}
