/* reshape.c - Reshape (and Flatten, a Reshape to (-1,)): a view (the output
 * is the input buffer, no step of its own). The target shape is given by the
 * caller, one -1 inferred. */
#include "layer.h"

/* -1 past LONG_MAX (then no input size matches) */
static long prod(const int *s, int r) {
    long n = 1;
    for (int i = 0; i < r; i++)
        if (__builtin_mul_overflow(n, (long)s[i], &n)) return -1;
    return n;
}

static bf_status reshape_infer(bf_layer *L, int rank, const int *shape) {
    (void)rank;
    (void)shape;
    long known = 1;
    int hole = -1;
    for (int i = 0; i < L->out_rank; i++) {
        if (L->out_shape[i] == -1 && hole < 0) hole = i;
        else if (L->out_shape[i] <= 0) return BF_FAIL(BF_ERR_ARG, "%s: bad target_shape dimension %d", L->name, L->out_shape[i]);
        else if (__builtin_mul_overflow(known, (long)L->out_shape[i], &known))
            return BF_FAIL(BF_ERR_SHAPE, "%s: target_shape has more than %ld elements", L->name, L->in_size);
    }
    if (hole >= 0) {
        if (L->in_size % known)
            return BF_FAIL(BF_ERR_SHAPE, "%s: cannot reshape %ld elements with target dimensions of product %ld", L->name, L->in_size, known);
        L->out_shape[hole] = (int)(L->in_size / known);
    }
    if (prod(L->out_shape, L->out_rank) != L->in_size)
        return BF_FAIL(BF_ERR_SHAPE, "%s: cannot reshape %ld elements into the target shape of %ld",
                       L->name, L->in_size, prod(L->out_shape, L->out_rank));
    return BF_OK;
}

const bf_layer_ops bf_ops_RESHAPE = {
    .name = "RESHAPE",
    .flags = BF_LF_VIEW | BF_LF_OUT_GIVEN | BF_LF_SCALAR | BF_LF_ANY_RANK,
    .infer = reshape_infer,
};
