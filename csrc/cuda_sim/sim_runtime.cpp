/* sim_runtime.cpp - the CUDA runtime of the device-emulation build: kernels
 * run on the host, block by block, each CUDA thread a fiber (switch.S).
 * Scheduling: the threads of a block run in order (BF_SIM_THREAD_ORDER), each
 * until it finishes or waits at a barrier; a thread that never waits hands its
 * stack to the next one (the no-barrier fast path). When every live thread
 * waits, the barrier opens (__syncthreads) or, for a warp all of whose live
 * threads wait in a shuffle, the warp's exchange completes. Any other stall is
 * barrier divergence: a launch failure.
 * Device memory: each cudaMalloc is its own mapping ending at 1 MiB of guard; a
 * kernel (or a cuBLAS / cuDNN stand-in) touching unmapped memory, a pointer
 * argument outside every live allocation, or an atomic on one becomes CUDA's
 * sticky cudaErrorIllegalAddress: every later call returns it.
 * Streams, events and copies: sim_streams.cpp (at the call, or queued per
 * stream: BF_SIM_STREAMS). Misuse (destroyed handles, copies in the wrong
 * direction, ranges outside an allocation, bad launch configurations) returns
 * CUDA's error codes.
 * Switches (environment, read once):
 *   BF_SIM_BLOCK_ORDER  forward | reverse | shuffled (BF_SIM_SEED)
 *   BF_SIM_THREAD_ORDER forward | reverse | shuffled (a permutation per block)
 *   BF_SIM_CC           compute capability, "8.0" (default) or "9.0", ...
 *   BF_SIM_DRIVER_VERSION / BF_SIM_RUNTIME_VERSION  e.g. 13000; driver 0: none
 *   BF_SIM_DEVICES      device count (default 1)
 *   BF_SIM_MEM          device memory bytes (default 16 GiB)
 *   BF_SIM_NAN_FILL     1: fresh device memory is NaN (0xff bytes), and so is
 *                       shared memory at the start of every block
 *   BF_SIM_PLANNED_WORKSPACE 1: a cuBLAS GEMM without cublasSetWorkspace fails
 *                       (sim_blas.cpp)
 *   BF_SIM_INTERLEAVE   1: a thread yields at every atomic and (INTERLEAVE=1
 *                       builds) every store to device or shared memory, and
 *                       blocks run BF_SIM_WAVE (4) at a time, their threads in
 *                       turns: a non-atomic read-modify-write loses updates,
 *                       within a block and between blocks
 *   BF_SIM_STREAMS      sync (default) | lazy | shuffled: sim_streams.cpp
 *   BF_SIM_CUDNN_VERSION, BF_SIM_TRACE=1 (refused launches on stderr) */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "sim_internal.h"

extern "C" void bf_sim_switch(void **save_sp, void *new_sp);

uint3 bf_sim_threadIdx, bf_sim_blockIdx;
dim3 bf_sim_blockDim, bf_sim_gridDim;

/* ---- configuration ---- */

static sim_config cfg;
static bool cfg_read;

const sim_config &sim_cfg(void) {
    if (cfg_read) return cfg;
    cfg_read = true;
    const char *s;
    cfg.block_order = 0;
    if ((s = getenv("BF_SIM_BLOCK_ORDER")))
        cfg.block_order = !strcmp(s, "reverse") ? 1 : !strcmp(s, "shuffled") ? 2 : 0;
    cfg.thread_order = 0;
    if ((s = getenv("BF_SIM_THREAD_ORDER")))
        cfg.thread_order = !strcmp(s, "reverse") ? 1 : !strcmp(s, "shuffled") ? 2 : 0;
    cfg.seed = (s = getenv("BF_SIM_SEED")) ? strtoul(s, NULL, 10) : 12345;
    cfg.cc_major = 8;
    cfg.cc_minor = 0;
    if ((s = getenv("BF_SIM_CC")) && *s) {
        cfg.cc_major = atoi(s);
        const char *d = strchr(s, '.');
        cfg.cc_minor = d ? atoi(d + 1) : 0;
    }
    cfg.runtime = (s = getenv("BF_SIM_RUNTIME_VERSION")) ? atoi(s) : CUDART_VERSION;
    cfg.driver = (s = getenv("BF_SIM_DRIVER_VERSION")) ? atoi(s) : cfg.runtime;
    cfg.devices = (s = getenv("BF_SIM_DEVICES")) ? atoi(s) : 1;
    cfg.mem = (s = getenv("BF_SIM_MEM")) ? strtoull(s, NULL, 10) : (size_t)16 << 30;
    cfg.nan_fill = (s = getenv("BF_SIM_NAN_FILL")) && *s == '1';
    cfg.cudnn = (s = getenv("BF_SIM_CUDNN_VERSION")) ? (size_t)atol(s) : (size_t)CUDNN_VERSION;
    cfg.trace = (s = getenv("BF_SIM_TRACE")) && *s == '1';
    cfg.interleave = (s = getenv("BF_SIM_INTERLEAVE")) && *s == '1';
    cfg.wave = cfg.interleave ? ((s = getenv("BF_SIM_WAVE")) && atoi(s) > 0 ? atoi(s) : 4) : 1;
    cfg.streams = 0;
    if ((s = getenv("BF_SIM_STREAMS")))
        cfg.streams = !strcmp(s, "lazy") ? 1 : !strcmp(s, "shuffled") ? 2 : 0;
    return cfg;
}

/* ---- errors ---- */

static cudaError_t sticky = cudaSuccess, last = cudaSuccess;

cudaError_t sim_err(cudaError_t e) {
    if (e != cudaSuccess) last = e;
    return e;
}
int sim_sticky(void) { return sticky != cudaSuccess; }
cudaError_t sim_sticky_error(void) { return sticky; }

#define STICKY_RETURN()                         \
    do {                                        \
        if (sticky != cudaSuccess) return sim_err(sticky); \
    } while (0)

extern "C" void bf_sim_fault(int err, const char *name, const char *why) {
    if (sticky == cudaSuccess) sticky = (cudaError_t)err;
    last = sticky;
    fprintf(stderr, "boundfit sim: %s: %s (%s)\n", name ? name : "?", why, cudaGetErrorName((cudaError_t)err));
}

/* ---- device memory ---- */

struct alloc_t {
    char *p;
    size_t n;
    char *map;
    size_t map_n;
};
static std::map<uintptr_t, alloc_t> allocs;    /* by start */
static std::map<uintptr_t, size_t> registered; /* pinned host ranges */
static size_t allocated;
static std::recursive_mutex big_lock;
std::recursive_mutex &sim_lock(void) { return big_lock; }

static const alloc_t *find_alloc(const void *q) {
    uintptr_t a = (uintptr_t)q;
    auto it = allocs.upper_bound(a);
    if (it == allocs.begin()) return NULL;
    --it;
    if (a >= it->first && a <= it->first + it->second.n) return &it->second; /* end pointer included */
    return NULL;
}

int sim_is_device(const void *p) { return find_alloc(p) != NULL; }

int sim_device_range(const void *p, size_t n) {
    const alloc_t *a = find_alloc(p);
    return a && (const char *)p + n <= a->p + a->n;
}

static int in_registered(const void *q) {
    uintptr_t a = (uintptr_t)q;
    auto it = registered.upper_bound(a);
    if (it == registered.begin()) return 0;
    --it;
    return a >= it->first && a <= it->first + it->second;
}

int sim_is_pinned(const void *p) { return in_registered(p); }

extern "C" int bf_sim_bad_pointer(const void *p) { return !find_alloc(p) && !in_registered(p); }

static const size_t PAGE = 4096;
/* no-access bytes after each allocation: a kernel whose threads run in reverse
 * order writes its farthest overrun first, which one guard page would let land
 * in the next mapping (a fiber stack, say) and corrupt it before any fault */
static const size_t GUARD = 1 << 20;

cudaError_t cudaMalloc(void **out, size_t n) {
    std::lock_guard<std::recursive_mutex> g(big_lock);
    if (!out) return sim_err(cudaErrorInvalidValue);
    *out = NULL;
    STICKY_RETURN();
    if (!n) return cudaSuccess;
    const sim_config &c = sim_cfg();
    if (n > c.mem || allocated + n > c.mem) return sim_err(cudaErrorMemoryAllocation);
    const size_t body = (n + 255) & ~(size_t)255, pages = (body + PAGE - 1) / PAGE * PAGE;
    char *m = (char *)mmap(NULL, pages + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
    if (m == MAP_FAILED) return sim_err(cudaErrorMemoryAllocation);
    mprotect(m + pages, GUARD, PROT_NONE); /* guard: overruns fault */
    char *p = m + pages - body;
    if (c.nan_fill) memset(p, 0xff, n);
    allocs[(uintptr_t)p] = alloc_t{p, n, m, pages + GUARD};
    allocated += n;
    *out = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    std::lock_guard<std::recursive_mutex> g(big_lock);
    sim_drain_all(); /* cudaFree synchronizes the device */
    STICKY_RETURN();
    if (!p) return cudaSuccess;
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) return sim_err(cudaErrorInvalidValue);
    allocated -= it->second.n;
    munmap(it->second.map, it->second.map_n);
    allocs.erase(it);
    return cudaSuccess;
}

void sim_scribble(void *p, size_t n) {
    if (!p) return;
    const size_t full = n < ((size_t)64 << 10) ? n : (size_t)64 << 10;
    memset(p, 0xff, full);
    for (size_t o = full; o + 4 <= n; o += 256) memset((char *)p + o, 0xff, 4);
}

cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) {
    STICKY_RETURN();
    *tot = sim_cfg().mem;
    *fr = *tot - allocated;
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t n, unsigned) {
    std::lock_guard<std::recursive_mutex> g(big_lock);
    STICKY_RETURN();
    if (!p || !n) return sim_err(cudaErrorInvalidValue);
    if (registered.count((uintptr_t)p)) return sim_err(cudaErrorHostMemoryAlreadyRegistered);
    registered[(uintptr_t)p] = n;
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p) {
    std::lock_guard<std::recursive_mutex> g(big_lock);
    sim_drain_all(); /* no queued copy reads an unmapped page after */
    STICKY_RETURN();
    if (!registered.erase((uintptr_t)p)) return sim_err(cudaErrorHostMemoryNotRegistered);
    return cudaSuccess;
}

/* ---- devices and versions ---- */

static int cur_device;

cudaError_t cudaDriverGetVersion(int *v) {
    *v = sim_cfg().driver;
    return *v ? cudaSuccess : sim_err(cudaErrorInsufficientDriver);
}

cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = sim_cfg().runtime;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 0;
    if (!sim_cfg().driver) return sim_err(cudaErrorInsufficientDriver);
    /* minor-version compatibility: only an older driver major is insufficient */
    if (sim_cfg().driver / 1000 < sim_cfg().runtime / 1000) return sim_err(cudaErrorInsufficientDriver);
    *n = sim_cfg().devices;
    return *n ? cudaSuccess : sim_err(cudaErrorNoDevice);
}

static cudaError_t device_ok(int d) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return e;
    return d >= 0 && d < n ? cudaSuccess : sim_err(cudaErrorInvalidDevice);
}

cudaError_t cudaSetDevice(int d) {
    STICKY_RETURN();
    cudaError_t e = device_ok(d);
    if (e == cudaSuccess) cur_device = d;
    return e;
}

cudaError_t cudaGetDevice(int *d) {
    STICKY_RETURN();
    *d = cur_device;
    return cudaSuccess;
}

static int sms(void) { return sim_cfg().cc_major >= 9 ? 132 : 108; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    cudaError_t e = device_ok(d);
    if (e != cudaSuccess) return e;
    memset(p, 0, sizeof *p);
    const sim_config &c = sim_cfg();
    snprintf(p->name, sizeof p->name, "boundfit device emulation (%s)",
             c.cc_major >= 9 ? "H100-like" : "A100-like");
    p->major = c.cc_major;
    p->minor = c.cc_minor;
    p->totalGlobalMem = c.mem;
    p->multiProcessorCount = sms();
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->sharedMemPerBlock = 48 << 10;
    p->warpSize = 32;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
    STICKY_RETURN();
    cudaError_t e = device_ok(d);
    if (e != cudaSuccess) return e;
    switch (a) {
    case cudaDevAttrComputeCapabilityMajor: *v = sim_cfg().cc_major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = sim_cfg().cc_minor; break;
    case cudaDevAttrMultiProcessorCount: *v = sms(); break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    default: return sim_err(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    if (sticky != cudaSuccess) return sticky;
    cudaError_t e = last;
    last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return sticky != cudaSuccess ? sticky : last; }

cudaError_t cudaDeviceSynchronize(void) {
    sim_drain_all();
    STICKY_RETURN();
    sim_wait_external();
    return cudaSuccess;
}

/* ---- kernels: fibers and the block scheduler ---- */

enum { T_FRESH, T_RUN, T_BAR, T_WARP, T_DONE };

struct sim_thread {
    void *sp;
    int state;
    int stack; /* index into stacks, -1: none */
    int pred;
    uint64_t shfl;
    uint3 tid;
};

/* a block running: one of the wave's slots (BF_SIM_WAVE blocks under
 * BF_SIM_INTERLEAVE, else 1); its threads are thr[slot * nthr ...] */
struct sim_block {
    uint3 idx;
    int live, fast, seq_next, bar_or;
    std::vector<int> perm;     /* BF_SIM_THREAD_ORDER=shuffled: position -> thread, drawn per block */
    std::vector<char> shared;  /* its __shared__ while another block of the wave runs */
};

static const size_t STACK = 256 << 10;
static std::vector<char *> stacks;
static std::vector<int> free_stacks;
static std::vector<sim_thread> thr;
static std::vector<sim_block> blk;
static int nthr, cur;          /* threads per block; the running thread (an index into thr) */
static sim_block *cb;          /* the running thread's block */
static void *sched_sp;
static void (*g_body)(void *);
static void *g_ctx;
static sigjmp_buf kernel_jmp;
static volatile sig_atomic_t in_kernel;
static const char *kernel_name;
static char *altstack;

static int take_stack(void) {
    if (!free_stacks.empty()) {
        int i = free_stacks.back();
        free_stacks.pop_back();
        return i;
    }
    char *m = (char *)mmap(NULL, STACK + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                           0);
    if (m == MAP_FAILED) return -1;
    mprotect(m, PAGE, PROT_NONE); /* overflow guard */
    stacks.push_back(m);
    return (int)stacks.size() - 1;
}

/* position k of block slot s's order -> index into thr */
static int pos_to_thread(int s, int k) {
    const int o = sim_cfg().thread_order;
    return s * nthr + (o == 1 ? nthr - 1 - k : o == 2 ? blk[s].perm[k] : k);
}

/* A fiber runs its thread; in the fast path (no thread of the block has
 * waited yet) it then runs the next unstarted thread on the same stack, so a
 * block without barriers is one switch, not two per thread. */
extern "C" __attribute__((noinline, noreturn)) void bf_sim_fiber_entry(void) {
    for (;;) {
        g_body(g_ctx);
        thr[cur].state = T_DONE;
        cb->live--;
        if (!cb->fast || cb->seq_next >= nthr) break;
        const int i = pos_to_thread((int)(cb - blk.data()), cb->seq_next++);
        thr[i].stack = thr[cur].stack;
        thr[cur].stack = -1;
        thr[i].state = T_RUN;
        cur = i;
        bf_sim_threadIdx = thr[i].tid;
    }
    free_stacks.push_back(thr[cur].stack); /* nothing runs before the switch leaves it */
    thr[cur].stack = -1;
    bf_sim_switch(&thr[cur].sp, sched_sp);
    __builtin_unreachable();
}

static void fiber_init(sim_thread *t) {
    void **sp = (void **)(stacks[t->stack] + PAGE + STACK);
    *--sp = NULL;                        /* fake return address: entry sees an ABI-aligned stack */
    *--sp = (void *)bf_sim_fiber_entry;  /* popped by ret */
    for (int i = 0; i < 6; i++) *--sp = NULL; /* rbp rbx r12-r15 */
    t->sp = sp;
}

/* the running thread waits (state) until the scheduler releases it */
static void wait_as(int state) {
    if (!in_kernel) {
        bf_sim_fault(cudaErrorIllegalInstruction, "host code", "barrier outside a kernel");
        return;
    }
    cb->fast = 0; /* the threads not started yet get fibers of their own */
    thr[cur].state = state;
    bf_sim_switch(&thr[cur].sp, sched_sp);
}

/* BF_SIM_INTERLEAVE=1: the running thread stays runnable but lets the other
 * threads of its block and of the wave's other blocks run first (called at
 * every atomic and, in a build with INTERLEAVE=1, before every store to
 * device or shared memory: sim_interleave.cpp), so a read-modify-write that
 * is not atomic loses the updates of the threads that ran in between, as it
 * can on a GPU */
extern "C" void bf_sim_yield(void) {
    if (!in_kernel || !sim_cfg().interleave) return;
    cb->fast = 0;
    bf_sim_switch(&thr[cur].sp, sched_sp);
}

extern "C" void bf_sim_syncthreads(void) {
    thr[cur].pred = 0;
    wait_as(T_BAR);
}

extern "C" int bf_sim_syncthreads_or(int pred) {
    thr[cur].pred = pred != 0;
    wait_as(T_BAR);
    return cb->bar_or;
}

extern "C" uint64_t bf_sim_shfl(uint64_t bits, int src_lane, int) {
    const int me = cur, base = (int)(cb - blk.data()) * nthr, warp0 = base + ((me - base) & ~31),
              src = warp0 + (src_lane & 31);
    thr[me].shfl = bits;
    wait_as(T_WARP);
    uint64_t r = (src < base + nthr && thr[src].state != T_DONE) ? thr[src].shfl : bits;
    wait_as(T_WARP); /* nobody overwrites its value before the warp has read */
    return r;
}

/* kernel aborted: out of every fiber, back to the launch */
static void kernel_abort(int err, const char *why) {
    bf_sim_fault(err, kernel_name, why);
    siglongjmp(kernel_jmp, 1);
}

extern "C" void bf_sim_check_address(const volatile void *p, size_t n) {
    if (!sim_device_range((const void *)p, n) && !in_registered((const void *)p))
        kernel_abort(cudaErrorIllegalAddress, "atomic on an address outside every live device allocation");
}

static struct sigaction old_segv, old_bus;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    if (in_kernel) {
        char why[96];
        snprintf(why, sizeof why, "illegal memory access at %p", si->si_addr);
        in_kernel = 0;
        kernel_abort(cudaErrorIllegalAddress, why);
    }
    /* not ours: the previous handler */
    struct sigaction *o = sig == SIGBUS ? &old_bus : &old_segv;
    if (o->sa_flags & SA_SIGINFO) o->sa_sigaction(sig, si, uc);
    else if (o->sa_handler != SIG_IGN && o->sa_handler != SIG_DFL) o->sa_handler(sig);
    else {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

void sim_guard_begin(const char *name) {
    if (!altstack) {
        altstack = (char *)mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        stack_t ss;
        ss.ss_sp = altstack;
        ss.ss_size = 1 << 16;
        ss.ss_flags = 0;
        sigaltstack(&ss, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    kernel_name = name;
    in_kernel = 1;
}

void sim_guard_end(void) {
    in_kernel = 0;
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
}

extern "C" int bf_sim_launch_check(dim3 g, dim3 b, size_t shmem, cudaStream_t st, const char *name) {
    sim_wait_external(); /* stream order after a collective still running */
    if (sticky != cudaSuccess) {
        last = sticky;
        return 1;
    }
    const char *why = NULL;
    cudaError_t e = cudaSuccess;
    const unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
    if (!b.x || !b.y || !b.z || !g.x || !g.y || !g.z) {
        why = "a zero grid or block dimension";
        e = cudaErrorInvalidConfiguration;
    } else if (nt > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64) {
        why = "more than 1024 threads per block (or a block dimension over its limit)";
        e = cudaErrorInvalidConfiguration;
    } else if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
        why = "grid dimensions over 2^31-1 x 65535 x 65535";
        e = cudaErrorInvalidConfiguration;
    } else if (shmem > (48u << 10)) {
        why = "more than 48 KiB of dynamic shared memory";
        e = cudaErrorInvalidValue;
    } else if (!sim_stream_ok(st)) {
        why = "a destroyed or unknown stream";
        e = cudaErrorInvalidResourceHandle;
    }
    if (!why) return 0;
    last = e;
    if (sim_cfg().trace) fprintf(stderr, "boundfit sim: launch of %s refused: %s\n", name, why);
    return 1;
}

static unsigned long lcg(unsigned long *s) {
    *s = *s * 6364136223846793005UL + 1442695040888963407UL;
    return *s >> 33;
}
static unsigned long rng_state, thread_rng_state;
static unsigned long rng(void) { return lcg(&rng_state); }

/* the __shared__ statics of sim_device.h (absent from a program without any) */
extern "C" char __start_bf_sim_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_bf_sim_shared[] __attribute__((weak, visibility("hidden")));
static size_t shared_bytes(void) { return __start_bf_sim_shared ? (size_t)(__stop_bf_sim_shared - __start_bf_sim_shared) : 0; }

/* block slot s starts (blockIdx idx): fresh threads and, with NaN fill, NaN shared memory */
static void block_init(int s, uint3 idx, int wave) {
    sim_block &b = blk[s];
    b.idx = idx;
    b.live = nthr;
    b.fast = 1;
    b.seq_next = 0;
    for (int i = s * nthr; i < (s + 1) * nthr; i++) {
        thr[i].state = T_FRESH;
        thr[i].stack = -1;
    }
    if (sim_cfg().thread_order == 2) { /* a fresh permutation for every block of every launch */
        b.perm.resize(nthr);
        for (int i = 0; i < nthr; i++) b.perm[i] = i;
        for (int i = nthr; i > 1; i--) std::swap(b.perm[i - 1], b.perm[lcg(&thread_rng_state) % i]);
    }
    const size_t n = shared_bytes();
    if (wave == 1) {
        if (sim_cfg().nan_fill && n) memset(__start_bf_sim_shared, 0xff, n);
    } else { /* kept aside while the other blocks run: NaN, or what the section holds (stale, as on a GPU) */
        b.shared.assign(__start_bf_sim_shared, __start_bf_sim_shared + n);
        if (sim_cfg().nan_fill) std::fill(b.shared.begin(), b.shared.end(), (char)0xff);
    }
}

/* the section holds slot s's shared memory (wave > 1: the resident block's is put aside) */
static int resident = -1;
static void enter_block(int s, int wave) {
    cb = &blk[s];
    bf_sim_blockIdx = cb->idx;
    if (wave == 1 || resident == s) return;
    const size_t n = shared_bytes();
    if (resident >= 0) memcpy(blk[resident].shared.data(), __start_bf_sim_shared, n);
    memcpy(__start_bf_sim_shared, cb->shared.data(), n);
    resident = s;
}

/* one turn of slot s: each runnable thread runs until it waits, yields or
 * ends; then, if none can run, its warps' exchanges or its barrier open.
 * 0: still running or done, 1: barrier divergence, -1: no stack */
static int block_turn(int s, int wave) {
    sim_block &b = blk[s];
    enter_block(s, wave);
    for (int k = b.fast ? b.seq_next : 0; k < nthr; k++) {
        const int i = pos_to_thread(s, k);
        sim_thread *t = &thr[i];
        if (t->state == T_FRESH) {
            t->stack = take_stack();
            if (t->stack < 0) return -1;
            fiber_init(t);
            t->state = T_RUN;
            if (b.fast) b.seq_next = k + 1;
        }
        if (t->state != T_RUN) continue;
        cur = i;
        bf_sim_threadIdx = t->tid;
        bf_sim_switch(&sched_sp, t->sp);
    }
    if (!b.live) return 0;
    const int lo = s * nthr, hi = lo + nthr;
    for (int i = lo; i < hi; i++)
        if (thr[i].state == T_RUN) return 0; /* threads that yielded (BF_SIM_INTERLEAVE) run next turn */
    /* every live thread waits: open the warps whose live threads all shuffle, else the block barrier */
    int released = 0;
    for (int w0 = lo; w0 < hi; w0 += 32) {
        int alive = 0, waiting = 0;
        for (int i = w0; i < hi && i < w0 + 32; i++) {
            alive += thr[i].state != T_DONE;
            waiting += thr[i].state == T_WARP;
        }
        if (waiting && waiting == alive) {
            for (int i = w0; i < hi && i < w0 + 32; i++)
                if (thr[i].state == T_WARP) thr[i].state = T_RUN;
            released = 1;
        }
    }
    if (released) return 0;
    int at_bar = 0, any = 0;
    for (int i = lo; i < hi; i++)
        if (thr[i].state == T_BAR) at_bar++, any |= thr[i].pred;
    if (at_bar != b.live) return 1; /* some wait at __syncthreads, others in a warp exchange */
    b.bar_or = any;
    for (int i = lo; i < hi; i++)
        if (thr[i].state == T_BAR) thr[i].state = T_RUN;
    return 0;
}

/* run the blocks ids[0..n) together, their turns in rounds (n > 1 only under
 * BF_SIM_INTERLEAVE: a block's threads then interleave with the others');
 * 0 or a launch failure */
static int run_wave(const uint3 *ids, int n) {
    for (int s = 0; s < n; s++) block_init(s, ids[s], n);
    resident = -1;
    for (;;) {
        int running = 0;
        for (int s = 0; s < n; s++) {
            if (!blk[s].live) continue;
            const int r = block_turn(s, n);
            if (r) return r;
            running |= blk[s].live != 0;
        }
        if (!running) break;
    }
    return 0;
}

static void run_grid(dim3 g, dim3 b, void (*body)(void *), void *ctx, const char *name) {
    std::lock_guard<std::recursive_mutex> lock(big_lock);
    const sim_config &c = sim_cfg();
    const unsigned long nb = (unsigned long)g.x * g.y * g.z;
    const int wave = (unsigned long)c.wave < nb ? c.wave : (int)nb;
    nthr = (int)(b.x * b.y * b.z);
    thr.resize((size_t)nthr * wave);
    blk.resize(wave);
    for (int i = 0; i < nthr * wave; i++) {
        const int l = i % nthr;
        thr[i].tid.x = l % b.x;
        thr[i].tid.y = l / b.x % b.y;
        thr[i].tid.z = l / (b.x * b.y);
    }
    std::vector<unsigned long> order;
    if (!thread_rng_state) thread_rng_state = c.seed ^ 0x9e3779b97f4a7c15UL;
    if (c.block_order == 2) {
        order.resize(nb);
        for (unsigned long i = 0; i < nb; i++) order[i] = i;
        rng_state = c.seed;
        for (unsigned long i = nb; i > 1; i--) std::swap(order[i - 1], order[rng() % i]);
    }
    g_body = body;
    g_ctx = ctx;
    bf_sim_blockDim = b;
    bf_sim_gridDim = g;
    sim_guard_begin(name);
    if (sigsetjmp(kernel_jmp, 1)) {
        /* aborted: every stack is free again */
        sim_guard_end();
        free_stacks.clear();
        for (int i = 0; i < (int)stacks.size(); i++) free_stacks.push_back(i);
        return;
    }
    std::vector<uint3> ids(wave);
    for (unsigned long k = 0; k < nb; k += wave) {
        const int n = nb - k < (unsigned long)wave ? (int)(nb - k) : wave;
        for (int s = 0; s < n; s++) {
            const unsigned long q = k + s, id = c.block_order == 2 ? order[q] : c.block_order == 1 ? nb - 1 - q : q;
            ids[s].x = (unsigned)(id % g.x);
            ids[s].y = (unsigned)(id / g.x % g.y);
            ids[s].z = (unsigned)(id / ((unsigned long)g.x * g.y));
        }
        const int r = run_wave(ids.data(), n);
        if (r) {
            sim_guard_end();
            free_stacks.clear();
            for (int i = 0; i < (int)stacks.size(); i++) free_stacks.push_back(i);
            bf_sim_fault(cudaErrorLaunchFailure, name,
                         r < 0 ? "no memory for thread stacks"
                               : "barrier divergence: some threads wait at __syncthreads, others in a warp shuffle");
            return;
        }
    }
    sim_guard_end();
}

extern "C" void bf_sim_submit_grid(cudaStream_t st, dim3 g, dim3 b, void (*body)(void *), void *ctx,
                                   void (*drop)(void *), const char *name) {
    std::shared_ptr<void> args(ctx, drop); /* the arguments live until the grid has run */
    sim_submit(st, [=] { run_grid(g, b, body, args.get(), name); });
}

/* ---- error strings ---- */

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
#define N(x) case x: return #x;
        N(cudaSuccess) N(cudaErrorInvalidValue) N(cudaErrorMemoryAllocation) N(cudaErrorInitializationError)
        N(cudaErrorInvalidConfiguration) N(cudaErrorInvalidPitchValue) N(cudaErrorInvalidMemcpyDirection)
        N(cudaErrorInsufficientDriver) N(cudaErrorNoDevice) N(cudaErrorInvalidDevice)
        N(cudaErrorInvalidResourceHandle) N(cudaErrorIllegalAddress) N(cudaErrorLaunchFailure)
        N(cudaErrorIllegalInstruction) N(cudaErrorHostMemoryAlreadyRegistered) N(cudaErrorHostMemoryNotRegistered)
        N(cudaErrorMisalignedAddress) N(cudaErrorLaunchTimeout) N(cudaErrorAssert)
#undef N
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorIllegalInstruction: return "an illegal instruction was encountered";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    default: return "unknown error";
    }
}
