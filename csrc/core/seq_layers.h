/* seq_layers.h - model-level parts of the sequence layers (Embedding,
 * SimpleRNN, LSTM, GRU, Bidirectional): shape inference and parameters,
 * mask propagation over the graph, Keras's unit_forget_bias. */
#ifndef BF_SEQ_LAYERS_H
#define BF_SEQ_LAYERS_H

#include "model.h"

static inline int bf_is_seq_kind(bf_layer_kind k) { return k >= BF_L_EMBEDDING && k <= BF_L_BIDIR; }
static inline int bf_is_rnn_kind(bf_layer_kind k) { return k >= BF_L_SIMPLE_RNN && k <= BF_L_BIDIR; }

/* output shape and parameters of a sequence layer on a per-sample input shape */
bf_status bf_seq_infer(bf_layer *L, int rank, const int *shape);
/* a masked output of rank >= 2 has its loss masked per position (seq_loss.c); one of rank 1 is refused */
bf_status bf_seq_check_outputs(const bf_model *m);
/* after initialization: LSTM unit_forget_bias sets the forget gate's bias to 1 */
void bf_seq_post_init(bf_model *m);

/* Several outputs (Keras return_state, Bidirectional merge_mode=None): the
 * recurrent node's output is the first, an RNN_PART node reading it gives
 * each other one. part >= 0: final state number `part` in Keras's order
 * (per direction h then, for an LSTM, c; forward then backward), shape
 * (U,); part -1 / -2: the forward / backward half of a Bidirectional whose
 * node computes merge_mode "concat". Initial states are the recurrent
 * node's inputs 1.. in the same order. */
static inline int bf_seq_nstates(const bf_layer *L) { return L->cell == BF_L_LSTM ? 2 : 1; }
/* node i: a recurrent node's initial states, an RNN_PART's source and output shape */
bf_status bf_seq_check_node(bf_model *m, int i);

#endif
