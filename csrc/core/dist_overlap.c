/* dist_overlap.c - the gradient all-reduce overlapped with backward on the
 * CPU (dist_overlap.h). The main thread posts work (a "go" agreement, then
 * buckets in table order, the same order on every rank); the communication
 * thread does it in that order with the transport's bounded waits and
 * reports the first error, which the main thread takes over in
 * bf_overlap_wait. */
#define _GNU_SOURCE
#include "dist_overlap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_mpi.h"

#define MAX_BUCKETS 64
#define BUCKET (1L << 20) /* floats: 4 MiB, at least (n / MAX_BUCKETS when larger) */

static struct {
    /* the table */
    long lo[MAX_BUCKETS], hi[MAX_BUCKETS];
    int ready_at[MAX_BUCKETS]; /* bucket complete once backward has finished this layer */
    int nb;
    /* the step */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started, active, busy, go_done, posted, done, failed;
    unsigned gen;
    float *grads;
    uint16_t *wire;
    bf_error err;
    long steps, early, buckets; /* counters: overlapped steps, buckets posted during backward, buckets */
    double wait_s, thread_s;    /* seconds the main thread waited for the thread; the thread worked */
} ov = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bf_overlap_enabled(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("BF_DIST_OVERLAP");
        v = !(e && e[0] == '0');
    }
    return v;
}

int bf_overlap_active(void) { return ov.active; }

int bf_overlap_buckets(const long **lo, const long **hi) {
    *lo = ov.lo;
    *hi = ov.hi;
    return ov.nb;
}

bf_status bf_overlap_plan(const bf_model *m) {
    if (ov.active) return BF_FAIL(BF_ERR_INTERNAL, "overlap: new bucket table while a step is in flight");
    /* last[i]: the lowest layer index whose backward adds into owner i's gradients */
    int *last = m->work; /* (nlayers) of the model's scratch */
    for (int i = 0; i < m->nlayers; i++) last[i] = i;
    for (int i = 0; i < m->nlayers; i++) {
        const int o = bf_model_owner(m, i);
        if (i < last[o]) last[o] = i;
    }
    static long env_target = -1; /* BF_DIST_BUCKET (floats): tests cut small models into several buckets */
    if (env_target < 0) {
        const char *e = getenv("BF_DIST_BUCKET");
        env_target = e && atol(e) > 0 ? atol(e) : 0;
    }
    long target = env_target > 0 ? env_target : BUCKET;
    if (m->n_trainable / (MAX_BUCKETS / 2) > target) target = m->n_trainable / (MAX_BUCKETS / 2) + 1;
    ov.nb = 0;
    long hi = m->n_trainable, lo = hi;
    int ready = m->nlayers;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        const bf_layer *L = &m->layers[i];
        if (L->share >= 0) continue;
        long a = -1, b = -1; /* its trainable range */
        for (int j = 0; j < L->nparam; j++) {
            const bf_param *p = &L->params[j];
            if (!p->trainable) continue;
            if (a < 0 || (long)p->grad_offset < a) a = (long)p->grad_offset;
            if ((long)p->grad_offset + p->n > b) b = (long)p->grad_offset + p->n;
        }
        if (a < 0) continue;
        if (b != lo) return BF_FAIL(BF_ERR_INTERNAL, "overlap: layer %d's gradients are not contiguous", i);
        if (last[i] < ready) ready = last[i];
        lo = a;
        while (hi - lo >= target) { /* a full bucket: the top `target` floats of what is pending */
            if (ov.nb == MAX_BUCKETS) return BF_FAIL(BF_ERR_INTERNAL, "overlap: too many buckets");
            ov.hi[ov.nb] = hi;
            ov.lo[ov.nb] = hi - target;
            ov.ready_at[ov.nb++] = ready;
            hi -= target;
        }
        if (hi == lo) ready = m->nlayers;
    }
    if (hi > lo) {
        if (ov.nb == MAX_BUCKETS) return BF_FAIL(BF_ERR_INTERNAL, "overlap: too many buckets");
        ov.hi[ov.nb] = hi;
        ov.lo[ov.nb] = lo;
        ov.ready_at[ov.nb++] = ready;
    }
    return BF_OK;
}

static void *thread_main(void *arg) {
    (void)arg;
    unsigned gen = 0;
    int did_go = 0, next = 0;
    pthread_mutex_lock(&ov.mu);
    for (;;) {
        if (ov.gen != gen) { /* a new step */
            gen = ov.gen;
            did_go = next = 0;
        }
        if (!(ov.active && !ov.failed && (!did_go || next < ov.posted))) {
            pthread_cond_wait(&ov.cv, &ov.mu);
            continue;
        }
        const int go = !did_go, b = next;
        float *g = ov.grads;
        uint16_t *w = ov.wire;
        ov.busy = 1;
        pthread_mutex_unlock(&ov.mu);
        const double t0 = now();
        bf_status s = go ? bf_dist_agree("the step's start (overlapped all-reduce)")
                         : bf_dist_sum_buckets(g, w, &ov.lo[b], &ov.hi[b], 1);
        const double t1 = now();
        pthread_mutex_lock(&ov.mu);
        ov.thread_s += t1 - t0;
        ov.busy = 0;
        if (go) {
            did_go = ov.go_done = 1;
        } else {
            next = b + 1;
            ov.done = next;
        }
        if (s != BF_OK) {
            memcpy(&ov.err, bf_last_error(), sizeof ov.err);
            ov.failed = 1;
        }
        pthread_cond_broadcast(&ov.cv);
    }
    return NULL;
}

bf_status bf_overlap_begin(float *grads, uint16_t *wire) {
    if (!ov.started) {
        if (pthread_create(&ov.th, NULL, thread_main, NULL) != 0)
            return BF_FAIL(BF_ERR_DIST, "distributed: cannot start the communication thread");
        pthread_detach(ov.th);
        ov.started = 1;
    }
    pthread_mutex_lock(&ov.mu);
    ov.grads = grads;
    ov.wire = wire;
    ov.posted = ov.done = ov.failed = ov.go_done = 0;
    ov.gen++;
    ov.active = 1;
    pthread_cond_broadcast(&ov.cv);
    pthread_mutex_unlock(&ov.mu);
    return BF_OK;
}

bf_status bf_overlap_layer_done(int i) {
    if (!ov.active) return BF_OK;
    pthread_mutex_lock(&ov.mu);
    int p = ov.posted;
    while (p < ov.nb && ov.ready_at[p] >= i) p++; /* in table order: the same on every rank */
    if (p != ov.posted) {
        ov.early += p - ov.posted;
        ov.posted = p;
        pthread_cond_broadcast(&ov.cv);
    }
    pthread_mutex_unlock(&ov.mu);
    return BF_OK;
}

/* the thread idle, done with all posted work (post_all: every bucket and
 * the go) or failed; then the step is over for it */
static int settle(int post_all) {
    pthread_mutex_lock(&ov.mu);
    if (post_all && ov.posted < ov.nb) {
        ov.posted = ov.nb;
        pthread_cond_broadcast(&ov.cv);
    }
    while (ov.busy || (!ov.failed && (ov.done < ov.posted || (post_all && !ov.go_done))))
        pthread_cond_wait(&ov.cv, &ov.mu);
    const int failed = ov.failed;
    ov.active = 0;
    pthread_mutex_unlock(&ov.mu);
    return failed;
}

void bf_overlap_counters(long *steps, long *early, long *buckets, double *wait_s, double *thread_s) {
    pthread_mutex_lock(&ov.mu);
    *steps = ov.steps;
    *early = ov.early;
    *buckets = ov.buckets;
    *wait_s = ov.wait_s;
    *thread_s = ov.thread_s;
    pthread_mutex_unlock(&ov.mu);
}

bf_status bf_overlap_wait(void) {
    if (!ov.active) return BF_OK;
    ov.steps++;
    ov.buckets += ov.nb;
    const double t0 = now();
    const int failed = settle(1);
    ov.wait_s += now() - t0;
    if (failed) return bf_set_error(&ov.err);
    return BF_OK;
}

void bf_overlap_drain(void) {
    if (ov.active) (void)settle(0);
}
