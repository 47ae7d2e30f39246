/* program.h - compiling a model into the step program of one run (step.h):
 * its buffers with their lifetimes, planned to offsets, and the run's plan
 * table; allocates nothing. Per-kind parts come from the layer registry. */
#ifndef BF_PROGRAM_H
#define BF_PROGRAM_H

#include "step.h"

/* Build the step program and its plan; allocates nothing. */
bf_status bf_run_plan(bf_run *r, bf_model *m, bf_backend *be, bf_mode mode, int rows, int weighted);

#endif
