/* opt_matrix.h - the optimizers whose update reads each variable's shape: Adafactor (factored second moments over
 * the last two axes) and Muon (Newton-Schulz orthogonalized momentum of its matrices, AdamW for the others). */
#ifndef BF_OPT_MATRIX_H
#define BF_OPT_MATRIX_H

#include "step.h"

/* bytes of the update's scratch (backend memory, planned at the end of the run's norms): Muon's largest matrix's
 * 2*R*C + 2*min(R,C)^2 floats, aligned; else 0 */
size_t bf_opt_matrix_ws_bytes(const bf_model *m);
/* Adafactor's or Muon's update of every trainable variable, a (lr, t, the optimizer's arguments) filled by the
 * caller; 0 when the backend lacks the op (refused before the run: bf_opt_matrix_check) */
bf_status bf_opt_matrix_update(bf_run *r, bf_update_args *a);
/* BF_ERR_ARG naming the optimizer when the run's backend has not its update (CUDA: CPU only) */
bf_status bf_opt_matrix_check(const bf_model *m, const bf_backend *be);

#endif
