/* par.c - the fork-join pool (par.h). A job is published in one 64-bit word,
 * generation (21 bits) | threads (7) | task count (18) | next task (18): a
 * thread claims task i by a compare-and-swap of the word, so a worker can
 * never run a task of a job that is over, and only slots below the job's
 * thread count take its tasks (each runs OpenBLAS with a buffer of its own:
 * no more buffers are in use than the threads blas_runtime brought up). The
 * caller claims tasks too: if no worker wakes
 * (none could be created, a forked child has none, the machine is busy) the
 * caller runs them all. Workers spin briefly on a 32-bit bell (pause, then
 * sched_yield), then sleep in futex_wait on it. Linux only; elsewhere everything runs on the caller. */
#define _GNU_SOURCE /* syscall, pthread_attr_setstacksize under -std=c11 */
#include "par.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "blas.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define BF_PAR_POOL 1
#else
#define BF_PAR_POOL 0
#endif

#define TASK_BITS 18
#define TASK_MASK ((1ull << TASK_BITS) - 1)
#define LIM_SHIFT (2 * TASK_BITS)
#define GEN_SHIFT (LIM_SHIFT + 7)
#define SPIN_ROUNDS 4000 /* pauses before a waiting caller yields its core */
#define PAUSE_NS 50000L   /* a worker spins on pause this long after its last task, */
#define SPIN_NS 2000000L  /* then on sched_yield up to this long, then sleeps: the ops
                             between two GEMMs are shorter, and a futex wake takes 10-50 us
                             on a virtual machine; the yields hand the core to a thread
                             that has work (this process's caller on a busy machine)
                             instead of spinning away the process's share of it */

static struct {
    int slots, workers;
    _Atomic int threads; /* what ops use now, <= slots */
    _Atomic uint64_t word; /* gen | n | next */
    _Atomic uint32_t bell; /* bumped per job: the futex workers sleep on */
    _Atomic int sleepers;
    _Atomic long done;
    _Atomic int busy; /* a job is in flight */
    bf_par_fn fn;
    void *ctx;
} P;

static _Thread_local int in_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* claims and runs tasks of the published job until none is left */
static void run_tasks(int slot) {
    for (;;) {
        uint64_t cur = atomic_load_explicit(&P.word, memory_order_acquire);
        const uint64_t n = (cur >> TASK_BITS) & TASK_MASK, i = cur & TASK_MASK;
        if (i >= n || (uint64_t)slot >= ((cur >> LIM_SHIFT) & 0x7f)) return;
        if (!atomic_compare_exchange_weak_explicit(&P.word, &cur, cur + 1, memory_order_acq_rel, memory_order_acquire))
            continue;
        in_task = 1;
        P.fn(P.ctx, (long)i, slot);
        in_task = 0;
        atomic_fetch_add_explicit(&P.done, 1, memory_order_release);
    }
}

#if BF_PAR_POOL
static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *worker(void *arg) {
    const int slot = (int)(intptr_t)arg;
    uint32_t seen = 0; /* the bell before the first job: a job posted before this thread ran is still seen */
    for (;;) {
        uint32_t b;
        int spins = 0;
        long t0 = 0;
        while ((b = atomic_load_explicit(&P.bell, memory_order_acquire)) == seen) {
            cpu_relax();
            if (++spins % 64 != 0) continue;
            const long t = now_ns();
            if (t0 == 0) t0 = t;
            if (t - t0 < PAUSE_NS) continue;
            if (t - t0 < SPIN_NS) {
                sched_yield();
                continue;
            }
            atomic_fetch_add(&P.sleepers, 1);
            syscall(SYS_futex, &P.bell, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
            atomic_fetch_sub(&P.sleepers, 1);
            spins = 0;
            t0 = 0;
        }
        seen = b;
        run_tasks(slot);
    }
    return NULL;
}

static void after_fork_child(void) { /* the child has no workers; a job cut off by the fork is void */
    P.workers = 0;
    atomic_store(&P.busy, 0);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void start(void) {
    const int n = bf_openblas_get_num_threads();
    P.slots = n < 1 ? 1 : n > BF_PAR_MAX ? BF_PAR_MAX : n;
    atomic_store(&P.threads, P.slots);
    bf_openblas_set_num_threads(1); /* the pool threads GEMMs from here on */
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setstacksize(&attr, 256 << 10);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int s = 1; s < P.slots; s++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker, (void *)(intptr_t)s) != 0) break;
        P.workers++;
    }
    pthread_attr_destroy(&attr);
    pthread_atfork(NULL, NULL, after_fork_child);
}
#endif

int bf_par_slots(void) {
#if BF_PAR_POOL
    pthread_once(&once, start);
    return P.slots;
#else
    return 1;
#endif
}

int bf_par_threads(void) {
    bf_par_slots();
#if BF_PAR_POOL
    return atomic_load(&P.threads);
#else
    return 1;
#endif
}

int bf_par_set_threads(int n) {
    const int slots = bf_par_slots();
    n = n < 1 ? 1 : n > slots ? slots : n;
    atomic_store(&P.threads, n);
    return n;
}

int bf_par_in_task(void) { return in_task; }

void bf_par_for(long n, int threads, bf_par_fn fn, void *ctx) {
    if (n <= 0) return;
    int expect = 0;
    if (threads <= 1 || n == 1 || in_task || n > (long)TASK_MASK || bf_par_slots() <= 1 || P.workers == 0 ||
        !atomic_compare_exchange_strong(&P.busy, &expect, 1)) {
        for (long t = 0; t < n; t++) fn(ctx, t, 0);
        return;
    }
    P.fn = fn;
    P.ctx = ctx;
    atomic_store_explicit(&P.done, 0, memory_order_relaxed);
    const uint64_t gen = ((atomic_load_explicit(&P.word, memory_order_relaxed) >> GEN_SHIFT) + 1) & 0x1fffff;
    const uint64_t lim = (uint64_t)(threads < P.slots ? threads : P.slots);
    atomic_store_explicit(&P.word, (gen << GEN_SHIFT) | (lim << LIM_SHIFT) | ((uint64_t)n << TASK_BITS),
                          memory_order_release);
    atomic_fetch_add_explicit(&P.bell, 1, memory_order_release);
#if BF_PAR_POOL
    if (atomic_load(&P.sleepers) > 0) syscall(SYS_futex, &P.bell, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
#endif
    run_tasks(0);
    for (long spins = 0; atomic_load_explicit(&P.done, memory_order_acquire) < n; spins++) {
        cpu_relax(); /* a worker finishing its last task; give way if it was preempted */
#if BF_PAR_POOL
        if (spins > SPIN_ROUNDS) sched_yield();
#endif
    }
    atomic_store_explicit(&P.busy, 0, memory_order_release);
}

long bf_par_parts(long n, long grain, long parts) {
    if (grain < 1) grain = 1;
    long k = n / grain;
    if (k > parts) k = parts;
    return k < 1 ? 1 : k;
}

void bf_par_range(long n, long nparts, long t, long *lo, long *hi) {
    *lo = n * t / nparts;
    *hi = n * (t + 1) / nparts;
}
