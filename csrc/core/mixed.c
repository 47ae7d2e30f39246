/* mixed.c - mixed precision in a step (mixed_bfloat16 / mixed_float16; docs/mixed-precision.md).
 * A node under a policy (bf_layer.half: BF_HALF_BF16 or BF_HALF_F16) stores
 * its output in that 16-bit type when its kind runs in chunks of rows
 * (BF_LF_ROWS) or reads its output only through the accessors on the whole
 * micro-batch (BF_LF_WHOLE16: Embedding, LayerNormalization,
 * GlobalAveragePooling, attention, the recurrent layers), no node of other
 * kinds reads it whole (read_whole) and it is no model output (the losses, metrics and
 * predictions read float32: its values are rounded to the 16-bit type's
 * there). A tensor's gradient has its values' storage. A node that reads or
 * writes 16 bits, or computes under a policy, runs here: each chunk of rows of
 * its inputs is expanded (16-bit) or rounded (a float32 input of a 16-bit
 * node: Keras casts it) into a float32 conversion buffer, the kind's own
 * float32 step runs on the chunk (bf_step_* return the chunk's pointers while
 * r->cv_on), and its output / input gradients are rounded back on store
 * (round to nearest even). Kinds with BF_LF_ROWS run in chunks of rows sized
 * by bf_mixed_size (the plan stays within the float32 plan's), the others on
 * the whole micro-batch, so every kind runs under the policy. Sums inside the
 * kernels stay float32. */
#include "mixed.h"

#include <string.h>

#include "bufs.h"
#include "planner.h"
#include "layer_registry.h"
#include "step_bufs.h"

#define BF_CV_CHUNK ((size_t)64 << 20) /* float32 bytes of one tensor's chunk, at most (ROWS kinds) */
#define BF_CV_MIN_ROWS 32                /* rows a chunk keeps where the saving at its time allows (GEMM sizes) */

/* bf16_convert's `how` for a 16-bit type (BF_HALF_BF16 / BF_HALF_F16) */
static bf_bf16_how how16(int half, bf_bf16_how how) { return half == BF_HALF_F16 ? how | BF_HALF_F16_BIT : how; }

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

/* tensor u holds values of the 16-bit type `half` already: a node under that policy made it (through views) */
static int holds(const bf_run *r, int u, int half) {
    const bf_model *m = r->m;
    for (int p = bf_model_producer(m, u); p >= 0; p = bf_model_producer(m, u)) {
        if (!(flags_of(r, p) & BF_LF_VIEW)) return m->layers[p].half == half;
        const bf_layer_ops *vo = bf_layer_ops_of((int)m->layers[p].kind);
        u = m->layers[p].in_ids[vo->view_in ? vo->view_in(r, p) : 0];
    }
    return 0;
}

/* input u of node i needs a float32 copy of its chunk (else the kernel reads its rows where they are); a float32
 * input of a 16-bit node is rounded as Keras casts it, unless it holds such values already or it is ids (an
 * Embedding's: BF_LF_IDS), which Keras never casts to the compute dtype */
static int input_copied(const bf_run *r, int i, int u) {
    const bf_layer *L = &r->m->layers[i];
    if (r->t16[u]) return 1;
    return L->half && !holds(r, u, L->half) && !((bf_layer_ops_of((int)L->kind)->flags & BF_LF_IDS) && u == L->in_ids[0]);
}

/* some node of this run reads tensor t (through views) whole: its kind lacks BF_LF_ROWS, so a 16-bit t would be
 * expanded for the whole micro-batch there, a float32 copy as large as t (its values stay rounded instead) */
static int read_whole(const bf_run *r, int t) {
    const bf_model *m = r->m;
    for (int c = bf_model_producer(m, t) + 1; c < m->nlayers; c++) {
        if (r->node_off[c]) continue;
        for (int j = 0; j < m->layers[c].nin; j++) {
            if (m->layers[c].in_ids[j] != t || !reads_input(r, c, j)) continue;
            const unsigned f = flags_of(r, c);
            const unsigned kinds = BF_LF_ROWS | (r->whole16 ? BF_LF_WHOLE16 : 0);
            if (f & BF_LF_VIEW ? read_whole(r, m->n_inputs + c) : !(f & kinds)) return 1;
        }
    }
    return 0;
}

/* the chunk's float32 view of tensor u (input of node i): copied into *p, or its own rows */
static bf_status load(bf_run *r, int i, int u, long r0, int n, int c, float **p) {
    const long sz = r->m->t_size[u];
    if (r->cv_t[u]) return BF_OK; /* read twice */
    if (!input_copied(r, i, u)) {
        r->cv_t[u] = bf_step_tensor(r, u) + r0 * sz;
        return BF_OK;
    }
    r->cv_t[u] = *p;
    *p += (size_t)c * sz;
    if (r->t16[u])
        return r->be->bf16_convert(r->be, r->cv_t[u], (uint16_t *)(void *)BF_BUF(r, r->t_buf[u]) + r0 * sz,
                                   how16(r->t16[u], BF_BF16_EXPAND), (long)n * sz);
    return r->be->bf16_convert(r->be, r->cv_t[u], bf_step_tensor(r, u) + r0 * sz,
                               how16(r->m->layers[i].half, BF_BF16_ROUND_F32), (long)n * sz);
}

/* floats per row of node i's conversion buffer: forward (back = 0) or backward */
static size_t cv_floats(const bf_run *r, int i, int back) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const int o = m->n_inputs + i;
    size_t f = 0;
    if (!back || (r->cv[i] & BF_CV_READS_IN))
        for (int j = 0; j < L->nin; j++) {
            int u = L->in_ids[j], seen = 0; /* an input read twice is copied once */
            for (int j2 = 0; j2 < j && !seen; j2++) seen = L->in_ids[j2] == u && reads_input(r, i, j2);
            if (!reads_input(r, i, j) || seen || !input_copied(r, i, u)) continue;
            f += (size_t)m->t_size[u];
        }
    if (r->t16[o]) f += (size_t)L->out_size * (back ? 1 + ((r->cv[i] & BF_CV_READS_OUT) != 0) : 1);
    if (back)
        for (int j = 0; j < L->nin; j++)
            if (r->gtmp[bf_model_edge(m, i, j)] != -3 && r->t16[L->in_ids[j]]) f += (size_t)m->t_size[L->in_ids[j]];
    return f;
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
    const unsigned kinds = BF_LF_ROWS | (r->whole16 ? BF_LF_WHOLE16 : 0);
    r->t16[o] = (unsigned char)((f & kinds) && !is_model_output(m, o) && !read_whole(r, o) ? L->half : 0);
    if (r->t16[o] && !(f & BF_LF_ROWS)) r->whole16_used = 1;
    int on = L->half != 0;
    for (int j = 0; j < L->nin; j++)
        if (reads_input(r, i, j)) on |= r->t16[L->in_ids[j]] != 0;
    if (!on) return BF_OK;
    if (!r->be->bf16_convert)
        return BF_FAIL(BF_ERR_ARG, "mixed precision on %s: this backend has no 16-bit conversions (layer '%s' "
                       "computes in 16 bits; use the float32 policy on this device)", r->be->name, L->name);
    r->cv[i] = BF_CV_ON;
    r->cv_rows[i] = r->B; /* ROWS kinds: bf_mixed_size chunks them */
    size_t fl = cv_floats(r, i, 0);
    if (!fl) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->cv_fw[i], fl * (size_t)r->B * sizeof(float), BF_BUF_WORKSPACE, L->name,
                         " float32 conversion (mixed precision)"));
    bf_run_use(r, r->cv_fw[i], t);
    return BF_OK;
}

bf_status bf_mixed_plan_backward(bf_run *r, int i, int tb) {
    size_t fl = cv_floats(r, i, 1);
    if (!fl) return BF_OK;
    BF_TRY(bf_run_newbuf(r, &r->cv_bw[i], fl * (size_t)r->B * sizeof(float), BF_BUF_WORKSPACE, r->m->layers[i].name,
                         " float32 conversion, backward (mixed precision)"));
    bf_run_use(r, r->cv_bw[i], tb);
    return BF_OK;
}

/* mark[b] = 1 for the planned buffers stored in 16 bits: values and gradients of t16 tensors */
static void mark16(const bf_run *r, unsigned char *mark) {
    const bf_model *m = r->m;
    for (int u = 0; u < m->n_inputs + m->nlayers; u++) {
        if (!r->t16[u]) continue;
        if (r->t_buf[u] >= 0) mark[r->t_buf[u]] = 1;
        if (r->t_grad[u] >= 0) mark[r->t_grad[u]] = 1;
    }
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < m->layers[i].nin; j++) {
            const int g = r->gtmp[bf_model_edge(m, i, j)];
            if (g >= 0 && r->t16[m->layers[i].in_ids[j]]) mark[g] = 1;
        }
}

/* rows per chunk of a conversion buffer of `per_row` floats living at t: a quarter of what the 16-bit buffers
 * live at t save beside float32, at least BF_CV_MIN_ROWS (bf_mixed_size shrinks what the peak cannot hold), at
 * most the micro-batch and BF_CV_CHUNK a tensor */
static int chunk_rows(const bf_run *r, const unsigned char *mark, int t, size_t per_row, size_t widest) {
    size_t saved = 0;
    for (int b = 0; b < r->nbuf; b++)
        if (mark[b] && r->bufs[b].first <= t && t <= r->bufs[b].last) saved += r->bufs[b].bytes;
    size_t c = saved / 4 / (per_row * sizeof(float)), cap = BF_CV_CHUNK / (widest * sizeof(float));
    if (c < BF_CV_MIN_ROWS) c = BF_CV_MIN_ROWS;
    if (c > cap) c = cap;
    if (c > (size_t)r->B) c = (size_t)r->B;
    return c < 1 ? 1 : (int)c;
}

/* the widest tensor node i converts a row of */
static size_t widest_of(const bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    size_t w = (size_t)L->out_size;
    for (int j = 0; j < L->nin; j++)
        if ((size_t)r->m->t_size[L->in_ids[j]] > w) w = (size_t)r->m->t_size[L->in_ids[j]];
    return w;
}

/* rows per chunk of node i's backward: its conversion buffer holds that many rows (the micro-batch without one) */
static int rows_bw(const bf_run *r, int i) {
    return r->cv_bw[i] < 0 ? r->B : (int)(r->bufs[r->cv_bw[i]].bytes / (cv_floats(r, i, 1) * sizeof(float)));
}

/* node i's conversion buffers sized for chunks of cv_rows[i] rows forward and bw[i] backward */
static void resize(bf_run *r, int i, const int *bw) {
    if (r->cv_fw[i] >= 0) r->bufs[r->cv_fw[i]].bytes = cv_floats(r, i, 0) * (size_t)r->cv_rows[i] * sizeof(float);
    if (r->cv_bw[i] >= 0) r->bufs[r->cv_bw[i]].bytes = cv_floats(r, i, 1) * (size_t)bw[i] * sizeof(float);
}

/* the planner's peak with the 16-bit buffers as float32 ones and no conversion buffers: the float32 plan's */
static bf_status float32_peak(bf_run *r, const unsigned char *mark, const int *bw, size_t *peak) {
    for (int b = 0; b < r->nbuf; b++) r->bufs[b].bytes *= mark[b] ? 2 : 1;
    for (int i = 0; i < r->m->nlayers; i++) {
        if (r->cv_fw[i] >= 0) r->bufs[r->cv_fw[i]].bytes = 0;
        if (r->cv_bw[i] >= 0) r->bufs[r->cv_bw[i]].bytes = 0;
    }
    bf_status s = bf_plan_offsets(r->bufs, r->nbuf, peak, r->plan_work, r->cap_buf);
    for (int b = 0; b < r->nbuf; b++) r->bufs[b].bytes /= mark[b] ? 2 : 1;
    for (int i = 0; i < r->m->nlayers; i++) resize(r, i, bw);
    return s;
}

bf_status bf_mixed_size(bf_run *r) {
    const bf_model *m = r->m;
    unsigned char *mark = r->work_b; /* (buffers) */
    int rows_kinds = 0, *bw = r->work_n; /* (nodes) */
    memset(mark, 0, (size_t)r->nbuf);
    mark16(r, mark);
    for (int i = 0; i < m->nlayers; i++) {
        bw[i] = r->B;
        if (!r->cv[i] || !(flags_of(r, i) & BF_LF_ROWS)) continue;
        const size_t w = widest_of(r, i);
        if (r->cv_fw[i] >= 0) r->cv_rows[i] = chunk_rows(r, mark, r->bufs[r->cv_fw[i]].first, cv_floats(r, i, 0), w);
        if (r->cv_bw[i] >= 0) bw[i] = chunk_rows(r, mark, r->bufs[r->cv_bw[i]].first, cv_floats(r, i, 1), w);
        resize(r, i, bw);
        rows_kinds = 1;
    }
    if (!rows_kinds) return BF_OK;
    /* halve the chunks whose buffers reach above the float32 plan's peak (all of them when the peak grew
     * otherwise) until the plan is within it, or they are single rows */
    size_t p32, p16;
    BF_TRY(float32_peak(r, mark, bw, &p32));
    for (;;) {
        BF_TRY(bf_plan_offsets(r->bufs, r->nbuf, &p16, r->plan_work, r->cap_buf));
        if (p16 <= p32) return BF_OK;
        int more = 0;
        for (int pass = 0; pass < 2 && !more; pass++)
            for (int i = 0; i < m->nlayers; i++) {
                if (!r->cv[i] || !(flags_of(r, i) & BF_LF_ROWS)) continue;
                const int hi_f = r->cv_fw[i] >= 0 && r->bufs[r->cv_fw[i]].offset + r->bufs[r->cv_fw[i]].bytes > p32;
                const int hi_b = r->cv_bw[i] >= 0 && r->bufs[r->cv_bw[i]].offset + r->bufs[r->cv_bw[i]].bytes > p32;
                if ((pass || hi_f) && r->cv_rows[i] > 1) { r->cv_rows[i] = (r->cv_rows[i] + 1) / 2; more = 1; }
                if ((pass || hi_b) && bw[i] > 1) { bw[i] = (bw[i] + 1) / 2; more = 1; }
                resize(r, i, bw);
            }
        if (!more) return BF_OK;
    }
}

static void clear(bf_run *r, int i) {
    const bf_layer *L = &r->m->layers[i];
    r->cv_on = 0;
    r->be->half = 0;
    r->cv_t[r->m->n_inputs + i] = NULL;
    for (int j = 0; j < L->nin; j++) r->cv_t[L->in_ids[j]] = NULL;
}

/* the rows [r0, r0 + n) of a float32 result: into 16-bit storage (half), or rounded in place under the policy */
static bf_status store(bf_run *r, int i, int half, float *f32, void *dst, long n) {
    if (half) return r->be->bf16_convert(r->be, dst, f32, how16(half, BF_BF16_ROUND), n);
    const int h = r->m->layers[i].half;
    return h ? r->be->bf16_convert(r->be, f32, f32, how16(h, BF_BF16_ROUND_F32), n) : BF_OK;
}

bf_status bf_mixed_forward(bf_run *r, int i, int rows) {
    const bf_layer *L = &r->m->layers[i];
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    const int o = r->m->n_inputs + i, c = r->cv_rows[i];
    const long osz = L->out_size;
    for (long r0 = 0; r0 < rows; r0 += c) {
        const int n = (int)(rows - r0 < c ? rows - r0 : c);
        float *p = bf_step_buf(r, r->cv_fw[i]);
        bf_status s = BF_OK;
        for (int j = 0; j < L->nin && s == BF_OK; j++)
            if (reads_input(r, i, j)) s = load(r, i, L->in_ids[j], r0, n, c, &p);
        void *dst = BF_BUF(r, r->t_buf[o]);
        if (r->t16[o]) { r->cv_t[o] = p; dst = (uint16_t *)dst + r0 * osz; }
        else r->cv_t[o] = (float *)dst + r0 * osz;
        r->cv_on = i + 1;
        r->cv_row0 = r0;
        r->be->half = L->half; /* a device's GEMMs / convolutions take the compute dtype's operands */
        if (s == BF_OK) s = ops->forward(r, i, n);
        float *res = r->cv_t[o];
        clear(r, i);
        BF_TRY(s);
        BF_TRY(store(r, i, r->t16[o], res, dst, (long)n * osz));
    }
    return BF_OK;
}

/* input j's gradient for the chunk: where the kernel writes it, and where it goes after */
static float *din_of(bf_run *r, int i, int j, long r0, int c, float **p, void **dst) {
    const bf_model *m = r->m;
    const int g = r->gtmp[bf_model_edge(m, i, j)], u = m->layers[i].in_ids[j];
    const long sz = m->t_size[u];
    *dst = NULL;
    if (g == -3) return NULL;
    char *buf = (char *)BF_BUF(r, g == -2 ? r->t_grad[u] : g);
    if (!r->t16[u]) return (float *)buf + r0 * sz;
    *dst = (uint16_t *)(void *)buf + r0 * sz;
    float *w = *p;
    *p += (size_t)c * sz;
    return w;
}

bf_status bf_mixed_backward(bf_run *r, int i, int rows) {
    const bf_model *m = r->m;
    const bf_layer *L = &m->layers[i];
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    const int o = m->n_inputs + i, c = rows_bw(r, i), h = r->t16[o];
    const long osz = L->out_size;
    void *dsts[BF_MAX_NODE_IN];
    for (long r0 = 0; r0 < rows; r0 += c) {
        const int n = (int)(rows - r0 < c ? rows - r0 : c);
        float *p = bf_step_buf(r, r->cv_bw[i]), *dout;
        char *g = (char *)BF_BUF(r, r->t_grad[o]);
        bf_status s;
        if (h) {
            dout = p;
            p += (size_t)c * osz;
            s = r->be->bf16_convert(r->be, dout, (uint16_t *)(void *)g + r0 * osz, how16(h, BF_BF16_EXPAND),
                                    (long)n * osz);
        } else { /* a float32 output: under the policy its gradient is a 16-bit one, as Keras's cast makes it */
            dout = (float *)g + r0 * osz;
            s = store(r, i, 0, dout, NULL, (long)n * osz);
        }
        for (int j = 0; j < L->nin && s == BF_OK && (r->cv[i] & BF_CV_READS_IN); j++)
            if (reads_input(r, i, j)) s = load(r, i, L->in_ids[j], r0, n, c, &p);
        if (h && (r->cv[i] & BF_CV_READS_OUT) && s == BF_OK) {
            r->cv_t[o] = p;
            p += (size_t)c * osz;
            s = r->be->bf16_convert(r->be, r->cv_t[o], (uint16_t *)(void *)BF_BUF(r, r->t_buf[o]) + r0 * osz,
                                    how16(h, BF_BF16_EXPAND), (long)n * osz);
        } else if (!h) {
            r->cv_t[o] = (float *)BF_BUF(r, r->t_buf[o]) + r0 * osz;
        }
        for (int j = 0; j < L->nin; j++) r->cv_din[j] = din_of(r, i, j, r0, c, &p, &dsts[j]);
        r->cv_on = i + 1;
        r->cv_row0 = r0;
        r->be->half = L->half;
        if (s == BF_OK) s = ops->backward(r, i, n, r->cv_din[0], dout);
        clear(r, i);
        BF_TRY(s);
        for (int j = 0; j < L->nin; j++) {
            if (!r->cv_din[j]) continue;
            const long k = (long)n * m->t_size[L->in_ids[j]];
            BF_TRY(store(r, i, dsts[j] ? r->t16[L->in_ids[j]] : 0, r->cv_din[j], dsts[j], k));
        }
    }
    /* Keras computes a layer's parameter gradients in its compute dtype and casts them back: rounded here (a
     * float16 one past 65504 is Inf, which skips a loss-scaled step as in Keras) */
    for (int j = 0; L->half && j < L->nparam; j++) {
        float *gp = bf_step_grad(r, L, j);
        if (gp && L->params[j].trainable)
            BF_TRY(r->be->bf16_convert(r->be, gp, gp, how16(L->half, BF_BF16_ROUND_F32), L->params[j].n));
    }
    return BF_OK;
}

bf_status bf_mixed_accumulate(bf_run *r, int u, void *grad, const void *tmp, long n) {
    if (r->t16[u]) return r->be->bf16_convert(r->be, grad, tmp, how16(r->t16[u], BF_BF16_ADD16), n);
    return r->be->ewise(r->be, grad, grad, tmp, NULL, BF_EW_ADD, 1.0f, n);
}
