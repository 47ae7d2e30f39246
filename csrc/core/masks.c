/* masks.c - the step masks of sequences (masks.h). */
#include "masks.h"

#include "bufs.h"
#include "layer_registry.h"

#define BUF(r, id) ((float *)((r)->scratch + (r)->bufs[id].offset))

bf_status bf_seq_check_outputs(const bf_model *m) {
    for (int k = 0; k < m->n_outputs; k++) {
        int t = m->out_t[k], e = m->t_mask[t];
        if (e < 0 || m->t_rank[t] >= 2) continue; /* masked per position (seq_loss.c) */
        int p = bf_model_producer(m, t);
        return BF_FAIL(BF_ERR_ARG, "output '%s' carries the mask of layer '%s' (mask_zero=True); Keras would mask "
                       "the loss with it, which boundfit does not do: end the masked sequence with a layer that "
                       "drops the mask (a recurrent layer without return_sequences, a pooling layer)",
                       p >= 0 ? m->layers[p].name : "input", m->layers[e].name);
    }
    return BF_OK;
}

void bf_seq_use_mask(bf_run *r, int tensor_id, int t) {
    int k = r->m->t_mask[tensor_id];
    if (k >= 0) bf_run_use(r, r->aux_id[k], t);
}

void bf_seq_plan_mask_readers(bf_run *r, int i, int t, int tb, int bw) {
    const bf_layer *L = &r->m->layers[i];
    const bf_layer_ops *ops = bf_layer_ops_of((int)L->kind);
    const int n = ops && ops->mask_reads ? ops->mask_reads(L) : 0;
    for (int j = 0; j < n && j < L->nin; j++) {
        bf_seq_use_mask(r, L->in_ids[j], t);
        if (bw) bf_seq_use_mask(r, L->in_ids[j], tb);
    }
}

const float *bf_seq_mask(bf_run *r, int tensor_id) {
    int k = r->m->t_mask[tensor_id];
    return k >= 0 && r->aux_id[k] >= 0 ? BUF(r, r->aux_id[k]) : NULL;
}
