/* opt_matrix.c - Adafactor's and Muon's update, one call of the backend per trainable variable (a shared layer's
 * once, by its owner), their state at the variable's offset in the slots: Adafactor v (slot 0), r (slot 1) and c
 * (slot 2), r and c using A*R and A*C of the variable's n floats; Muon momentum (slot 0) and, for its AdamW
 * variables, velocity (slot 1). Keras's rules for which variables are Muon's matrices are Python's
 * (optimizers/more.py, through bf_model_set_matrices). */
#include "opt_matrix.h"

static long muon_ws(const bf_param *p) {
    const long R = p->shape[0], C = p->shape[1], k = R < C ? R : C;
    return 2 * R * C + 2 * k * k;
}

size_t bf_opt_matrix_ws_bytes(const bf_model *m) {
    long most = 0;
    if (m->opt.kind != BF_OPT_MUON) return 0;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) {
            const bf_param *p = &m->layers[i].params[j];
            if (p->trainable && p->matrix && muon_ws(p) > most) most = muon_ws(p);
        }
    return most ? bf_align_up(sizeof(float) * (size_t)most) : 0;
}

bf_status bf_opt_matrix_check(const bf_model *m, const bf_backend *be) {
    if (m->opt.kind == BF_OPT_ADAFACTOR && !be->adafactor_update)
        return BF_FAIL(BF_ERR_ARG, "the Adafactor optimizer is not implemented on the %s backend in this build; train "
                       "with device='cpu', or use Adam / Lion there", be->name);
    if (m->opt.kind == BF_OPT_MUON && !be->muon_update)
        return BF_FAIL(BF_ERR_ARG, "the Muon optimizer is not implemented on the %s backend in this build; train with "
                       "device='cpu', or use AdamW there", be->name);
    return BF_OK;
}

bf_status bf_opt_matrix_update(bf_run *r, bf_update_args *a) {
    bf_model *m = r->m;
    bf_backend *be = r->be;
    const long n = m->n_trainable;
    BF_TRY(bf_opt_matrix_check(m, be));
    float *ws = (float *)(void *)((char *)r->norms + (r->norm_bytes - bf_opt_matrix_ws_bytes(m))); /* its end */
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; m->layers[i].share < 0 && j < m->layers[i].nparam; j++) {
            const bf_param *p = &m->layers[i].params[j];
            if (!p->trainable) continue;
            const long off = (long)p->grad_offset; /* the slots follow the gradients' layout */
            float *w = r->w + p->offset, *g = r->grads + off, *s0 = r->slots + off, *s1 = r->slots + n + off;
            if (m->opt.kind == BF_OPT_MUON) {
                const long R = p->matrix ? p->shape[0] : 1, C = p->matrix ? p->shape[1] : p->n;
                BF_TRY(be->muon_update(be, w, s0, s1, ws, g, R, C, p->matrix, a));
                continue;
            }
            const int factored = p->rank >= 2;
            const long C = factored ? p->shape[p->rank - 1] : p->n, R = factored ? p->shape[p->rank - 2] : 1;
            BF_TRY(be->adafactor_update(be, w, s0, s1, r->slots + 2 * n + off, g, p->n / (R * C), R, C, factored, a));
        }
    return BF_OK;
}
