/* par.h - the engine's one fork-join pool. Every op of the CPU backend that
 * runs on more than one core runs here: GEMMs split by rows or columns into
 * one-thread OpenBLAS calls (gemm.c), attention's per-head tiles, elementwise
 * and row-wise kernels. OpenBLAS itself runs on one thread once the pool is
 * up: with its own threads threading only the GEMMs, everything between them
 * ran on one core while its workers spun, and two pools fought for the cores. */
#ifndef BF_PAR_H
#define BF_PAR_H

#define BF_PAR_MAX 64 /* slots at most: per-slot scratch is planned for each */

/* task t of n on thread `slot` (0: the caller, 1..: workers) */
typedef void (*bf_par_fn)(void *ctx, long t, int slot);

/* Threads the pool has (the caller + workers): OpenBLAS's thread count when
 * the pool started (its default: the cores, or OPENBLAS_NUM_THREADS), at
 * most BF_PAR_MAX; fixed for the process, so scratch planned per slot keeps
 * its size. Starts the pool and turns OpenBLAS to one thread (idempotent; if
 * a worker cannot be created the pool has fewer and the work still runs). */
int bf_par_slots(void);

/* Threads ops use now: bf_par_slots() unless lowered; set clamps to
 * [1, bf_par_slots()] and returns what it set. */
int bf_par_threads(void);
int bf_par_set_threads(int n);

/* nonzero on a thread that is running a task (a nested bf_par_for is serial) */
int bf_par_in_task(void);

/* Runs fn(ctx, t, slot) for every t in [0, n) on the caller and up to
 * threads - 1 workers (threads <= 1, a nested call or a call while another
 * thread's job runs: all on the caller); returns when every task has run. */
void bf_par_for(long n, int threads, bf_par_fn fn, void *ctx);

/* Splits [0, n) into at most `parts` ranges of at least `grain`: part t is
 * [*lo, *hi). The number of parts is bf_par_parts(n, grain, parts). */
long bf_par_parts(long n, long grain, long parts);
void bf_par_range(long n, long nparts, long t, long *lo, long *hi);

#endif
