/* Closed-form learning-rate schedules (see schedule.h); the same float32
 * operations as Keras 3's schedules, so rates agree to rounding. */
#include "schedule.h"

#include <math.h>

static float cosine_decay(float step, float decay_steps, float alpha, float from_lr) {
    const float pi = 3.14159265358979323846f;
    float c = 0.5f * (1.0f + cosf(pi * (step / decay_steps)));
    return from_lr * ((1.0f - alpha) * c + alpha);
}

float bf_schedule_rate(const bf_schedule *s, float constant_lr, long step) {
    float t = (float)step, lr0 = s->p[0], ds = s->p[1], p;
    switch (s->kind) {
    case BF_SCHED_EXPONENTIAL:
        p = t / ds;
        if (s->flag) p = floorf(p);
        return lr0 * powf(s->p[2], p);
    case BF_SCHED_INVERSE_TIME:
        p = t / ds;
        if (s->flag) p = floorf(p);
        return lr0 / (1.0f + s->p[2] * p);
    case BF_SCHED_POLYNOMIAL:
        if (s->flag) ds *= (t == 0.0f) ? 1.0f : ceilf(t / ds);
        else t = fminf(t, ds);
        p = t / ds;
        return (lr0 - s->p[2]) * powf(1.0f - p, s->p[3]) + s->p[2];
    case BF_SCHED_COSINE:
        if (!s->flag) return cosine_decay(fminf(t, ds), ds, s->p[2], lr0);
        t = fminf(t, ds + s->p[4]);
        if (t < s->p[4]) return (s->p[3] - lr0) * (t / s->p[4]) + lr0;
        return cosine_decay(t - s->p[4], ds, s->p[2], s->p[3]);
    case BF_SCHED_PIECEWISE:
        for (int i = 0; i < s->nbounds; i++)
            if ((double)step <= s->bounds[i]) return s->values[i];
        return s->values[s->nbounds];
    default:
        return constant_lr;
    }
}
