/* prefetch.c - the double-buffered batch pipeline (see prefetch.h).
 * With one job there is no thread: the rows are gathered in the caller. A
 * gather's data error names its batch (the job's step). */
#include "prefetch.h"

#include <math.h>
#include <string.h>
#include <time.h>

void bf_jobs_init(bf_jobs *it, long n, long batch, long mb, long first_step, long nsteps) {
    it->n = n;
    it->batch = batch;
    it->mb = mb;
    it->step = first_step;
    it->step_end = first_step + nsteps;
    it->done = 0;
}

int bf_jobs_next(bf_jobs *it, long *start, long *rows, long *step, long *step_rows, int *first) {
    for (;;) {
        if (it->step >= it->step_end) return 0;
        long s0 = it->step * it->batch;
        if (s0 >= it->n) return 0;
        long srows = it->n - s0 < it->batch ? it->n - s0 : it->batch;
        if (it->done >= srows) { it->step++; it->done = 0; continue; }
        *start = s0 + it->done;
        *rows = srows - it->done < it->mb ? srows - it->done : it->mb;
        *step = it->step;
        *step_rows = srows;
        *first = it->done == 0;
        it->done += *rows;
        return 1;
    }
}

/* rows [done, done + c) of host weight slot k: sample weight (or 1) times
 * the class weight of the row's label (Keras: the argmax of a one-hot row,
 * else the label rounded half to even) */
static bf_status gather_weights(bf_run *r, int k, long done, long c, const int64_t *idx, int64_t y_row) {
    float *w = r->hw[k] + done;
    if (r->sw_src) BF_TRY(bf_gather_rows(w, 1, r->sw_src, idx, c));
    else for (long j = 0; j < c; j++) w[j] = 1.0f;
    if (!r->cw) return BF_OK;
    for (long j = 0; j < c; j++) {
        const float *y = r->hy[k] + (done + j) * y_row;
        long cls = 0;
        if (y_row > 1) {
            for (int64_t q = 1; q < y_row; q++)
                if (y[q] > y[cls]) cls = (long)q;
        } else {
            float v = rintf(y[0]);
            cls = v >= 0.0f && v < (float)r->ncw ? (long)v : -1;
        }
        if (cls >= 0 && cls < r->ncw) w[j] *= r->cw[cls];
    }
    return BF_OK;
}

/* a data error of a step's rows (a memory-mapped file truncated under the run)
 * named by its batch, as the engine's other data errors are ("batch N: ...") */
static bf_status in_batch(bf_status s, long step) {
    if (s != BF_ERR_DATA) return s;
    char msg[BF_MSG_LEN];
    memcpy(msg, bf_last_error()->msg, sizeof msg);
    msg[BF_MSG_LEN - 1] = 0;
    return BF_FAIL(BF_ERR_DATA, "batch %ld: %s", step, msg);
}

/* rows order[start .. start+n) (or base+start ..) of x's and y's sources into host slot k */
static bf_status gather(bf_prefetch *p, int k, long start, long n) {
    int64_t idx[512];
    bf_run *r = p->r;
    for (long done = 0; done < n;) {
        long c = n - done < 512 ? n - done : 512;
        for (long j = 0; j < c; j++) idx[j] = p->order ? p->order[start + done + j] : p->base + start + done + j;
        BF_TRY(bf_gather_packed(r->hx[k] + done * p->x->row, p->x, idx, c));
        if (p->y) BF_TRY(bf_gather_packed(r->hy[k] + done * p->y->row, p->y, idx, c));
        if (p->y && r->weighted) BF_TRY(gather_weights(r, k, done, c, idx, p->y->row));
        done += c;
    }
    return BF_OK;
}

static void *worker(void *arg) {
    bf_prefetch *p = arg;
    bf_jobs it = p->jobs;
    long start, rows, step, srows;
    int first;
    for (long j = 0; bf_jobs_next(&it, &start, &rows, &step, &srows, &first); j++) {
        pthread_mutex_lock(&p->mu);
        while (j - p->consumed >= BF_PREFETCH_DEPTH && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        bf_status s = in_batch(gather(p, (int)((p->slot_base + j) % BF_PREFETCH_DEPTH), start, rows), step);
        pthread_mutex_lock(&p->mu);
        if (s != BF_OK) {
            p->err = *bf_last_error();
            p->failed_job = j;
        }
        p->produced = j + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (s != BF_OK) break;
    }
    return NULL;
}

bf_status bf_prefetch_start(bf_prefetch *p, bf_run *r, const bf_srcs *x, const bf_srcs *y, const int64_t *order,
                            long base, const bf_jobs *jobs) {
    memset(p, 0, sizeof *p);
    p->r = r;
    p->x = x;
    p->y = y;
    p->order = order;
    p->base = base;
    p->jobs = *jobs;
    p->failed_job = -1;
    p->slot_base = r->job_seq;
    /* one job (or fewer): gather in the caller, no thread */
    bf_jobs probe = *jobs;
    long a, b, c, d;
    int e;
    int njobs = bf_jobs_next(&probe, &a, &b, &c, &d, &e);
    njobs += bf_jobs_next(&probe, &a, &b, &c, &d, &e);
    if (njobs < 2) return BF_OK;
    pthread_attr_t attr;
    if (pthread_mutex_init(&p->mu, NULL) != 0) return BF_FAIL(BF_ERR_NOMEM, "prefetch: mutex init failed");
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return BF_FAIL(BF_ERR_NOMEM, "prefetch: condition init failed");
    }
    int rc = pthread_attr_init(&attr);
    if (rc == 0) rc = pthread_attr_setstacksize(&attr, BF_PREFETCH_STACK);
    if (rc == 0) rc = pthread_create(&p->thread, &attr, worker, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        /* no thread: fall back to gathering in the caller */
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        return BF_OK;
    }
    p->threaded = 1;
    return BF_OK;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

bf_status bf_prefetch_acquire(bf_prefetch *p, long j, int *slot) {
    *slot = (int)((p->slot_base + j) % BF_PREFETCH_DEPTH);
    p->r->job_seq = p->slot_base + j + 1;
    if (!p->threaded) {
        long start, rows, step, srows;
        int first;
        if (!bf_jobs_next(&p->jobs, &start, &rows, &step, &srows, &first))
            return BF_FAIL(BF_ERR_INTERNAL, "prefetch: no job %ld", j);
        double t0 = now();
        bf_status s = in_batch(gather(p, *slot, start, rows), step);
        p->wait_seconds += now() - t0;
        return s;
    }
    double t0 = now();
    pthread_mutex_lock(&p->mu);
    while (p->produced <= j) pthread_cond_wait(&p->cv, &p->mu);
    int failed = p->failed_job == j;
    pthread_mutex_unlock(&p->mu);
    p->wait_seconds += now() - t0;
    if (failed) return bf_set_error(&p->err);
    return BF_OK;
}

void bf_prefetch_release(bf_prefetch *p, long j) {
    if (!p->threaded) return;
    pthread_mutex_lock(&p->mu);
    p->consumed = j + 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void bf_prefetch_stop(bf_prefetch *p) {
    if (!p->threaded) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    p->threaded = 0;
}
