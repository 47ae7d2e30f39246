/* registry.c - the table of layer vtables (layer_registry.h), one entry per kind
 * in layer_kinds.h. */
#include "../layer_registry.h"

#include <stddef.h>

#define BF_KIND_ENTRY_(n) &bf_ops_##n,
static const bf_layer_ops *const table[] = {BF_LAYER_KINDS(BF_KIND_ENTRY_)};
#undef BF_KIND_ENTRY_

#define BF_KIND_NAME_(n) #n,
const char *const bf_layer_kind_names[] = {BF_LAYER_KINDS(BF_KIND_NAME_)};
#undef BF_KIND_NAME_
const int bf_layer_kind_count = (int)(sizeof table / sizeof table[0]);

const bf_layer_ops *bf_layer_ops_of(int k) { return k >= 0 && k < bf_layer_kind_count ? table[k] : NULL; }
