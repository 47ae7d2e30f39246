/* Learning-rate schedules in closed form (Keras 3's keras.optimizers.schedules):
 * the engine computes the rate of each update from the optimizer's iteration
 * count (completed updates), so a scheduled run needs no Python per step. */
#ifndef BF_SCHEDULE_H
#define BF_SCHEDULE_H

#define BF_SCHED_MAX_BOUNDS 16

typedef enum {
    BF_SCHED_NONE = 0,      /* constant: bf_optimizer.lr */
    BF_SCHED_EXPONENTIAL,   /* p: lr0, decay_steps, decay_rate; flag: staircase */
    BF_SCHED_INVERSE_TIME,  /* p: lr0, decay_steps, decay_rate; flag: staircase */
    BF_SCHED_POLYNOMIAL,    /* p: lr0, decay_steps, end_lr, power; flag: cycle */
    BF_SCHED_COSINE,        /* p: lr0, decay_steps, alpha, warmup_target, warmup_steps; flag: has warmup */
    BF_SCHED_PIECEWISE,     /* bounds[nbounds], values[nbounds + 1] */
    BF_SCHED_LAST = BF_SCHED_PIECEWISE
} bf_sched_kind;

typedef struct {
    bf_sched_kind kind;
    float p[5];
    int flag;
    int nbounds;
    double bounds[BF_SCHED_MAX_BOUNDS];
    float values[BF_SCHED_MAX_BOUNDS + 1];
} bf_schedule;

/* the rate at iteration `step` (float32 arithmetic, as Keras computes it) */
float bf_schedule_rate(const bf_schedule *s, float constant_lr, long step);

#endif
