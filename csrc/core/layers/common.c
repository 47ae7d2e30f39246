/* common.c - small pieces the layer vtables share: mask pass-through, a
 * node's flags in a run, one row copied to every sample. */
#include "layer.h"

#include <string.h>

bf_status bf_mask_keep(const bf_model *m, int i, int *mask) {
    *mask = m->t_mask[m->layers[i].in_ids[0]];
    return BF_OK;
}

unsigned bf_layer_node_flags(const bf_run *r, int i) {
    const bf_layer_ops *ops = bf_layer_ops_of(r->m->layers[i].kind);
    if (!ops) return 0;
    return ops->node_flags ? ops->node_flags(r, i) : ops->flags;
}

bf_status bf_run_rows_of(bf_run *r, float *out, const float *one, int rows, long size) {
    bf_strided g;
    memset(&g, 0, sizeof g);
    g.nd = 2;
    g.n[0] = rows;
    g.n[1] = size;
    g.os[0] = size;
    g.os[1] = 1;
    g.is[1] = 1; /* is[0] = 0: every row reads the one copy */
    return r->be->strided_copy(r->be, out, one, &g);
}
