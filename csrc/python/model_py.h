/* model_py.h - the Model and Run Python objects (engine structs inside). */
#ifndef BF_MODEL_PY_H
#define BF_MODEL_PY_H

#include "glue.h"
#include "run.h"

typedef struct {
    PyObject_HEAD
    bf_model m;
    bf_run scratch; /* for plan(): a run description that is never opened */
    int busy;       /* number of open runs on this model */
} ModelObject;

typedef struct {
    PyObject_HEAD
    ModelObject *model;
    bf_run r;
    int open;
} RunObject;

PyObject *bf_run_new(ModelObject *model, bf_mode mode, int rows, const char *device, size_t host_budget,
                     size_t device_budget, unsigned long long seed);

#endif
