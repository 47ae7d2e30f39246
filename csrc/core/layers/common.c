/* common.c - small pieces the layer vtables share: mask pass-through and a
 * node's flags in a run. */
#include "layer.h"

bf_status bf_mask_keep(const bf_model *m, int i, int *mask) {
    *mask = m->t_mask[m->layers[i].in_ids[0]];
    return BF_OK;
}

unsigned bf_layer_node_flags(const bf_run *r, int i) {
    const bf_layer_ops *ops = bf_layer_ops_of(r->m->layers[i].kind);
    if (!ops) return 0;
    return ops->node_flags ? ops->node_flags(r, i) : ops->flags;
}
