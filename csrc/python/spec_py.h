/* spec_py.h - layer and metric spec dicts into engine structs (spec_py.c). */
#ifndef BF_SPEC_PY_H
#define BF_SPEC_PY_H

#include "glue.h"
#include "model.h"

/* a layer spec dict into *L; -1 with an exception naming the layer, the key and the value. Its input ids go to
 * ids (L->in_ids), which has room for cap of them; it takes max(L->nin, 1) (a chain's node: the one model.c fills) */
int bf_parse_layer(PyObject *d, bf_layer *L, int *ids, int cap);
/* metrics[i], a dict, into *ms */
int bf_parse_metric(PyObject *d, Py_ssize_t i, bf_metric_spec *ms);
/* a per-sample shape of 0 to BF_MAX_RANK dimensions, each 1..INT_MAX (allow_hole: or -1, Reshape's inferred one) */
int bf_parse_shape(PyObject *seq, const char *what, int *rank, int *shape, int allow_hole);

#endif
