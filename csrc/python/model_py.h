/* model_py.h - the Model and Run Python objects (engine structs inside). */
#ifndef BF_MODEL_PY_H
#define BF_MODEL_PY_H

#include "glue.h"
#include "run.h"

/* Weights on a device: an open training run on a device holds the newest
 * weights and optimizer state (the model's `owner`); the host copy in m is
 * brought up to date (pulled) before anything reads it, and pushed to the
 * owner after anything writes it. Every device run remembers the version of
 * the weights its copy holds and refreshes it before computing. A model that
 * borrows another's weights (a training graph: `base`) has no weights, owner
 * or version of its own: those of its base (bf_weights_root). */
struct RunObject;

typedef struct ModelObjectS {
    PyObject_HEAD
    bf_model m;
    bf_run scratch; /* for plan(): a run description that is never opened */
    int busy;       /* number of open runs on this model */
    struct RunObject *owner; /* open device training run, or NULL (borrowed) */
    unsigned long wver;      /* bumped whenever the weights change */
    struct ModelObjectS *base; /* the model whose weights m->w are (held), or NULL: its own */
} ModelObject;

/* the model holding mo's weights: their owner run and version */
static inline ModelObject *bf_weights_root(ModelObject *mo) { return mo->base ? (ModelObject *)mo->base : mo; }

typedef struct RunObject {
    PyObject_HEAD
    ModelObject *model;
    bf_run r;
    int open;
    unsigned long wver; /* the model's weights version this run's copy holds */
} RunObject;

/* host weights / optimizer state up to date from the owner; -1 with an exception set */
int bf_model_pull(ModelObject *mo);
/* the host weights / optimizer state changed: a new version, copied to the owner */
int bf_model_push(ModelObject *mo);

PyObject *bf_run_new(ModelObject *model, bf_mode mode, int rows, const char *device, size_t host_budget,
                     size_t device_budget, unsigned long long seed, int weighted);

#endif
