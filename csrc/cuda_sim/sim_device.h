/* sim_device.h - force-included (g++ -include) into every csrc/cuda source of
 * the device-emulation build (build.sh): the CUDA device-side language on the
 * host. Kernels run block by block, each CUDA thread a fiber (sim_runtime.cpp)
 * with real barrier semantics (__syncthreads, __syncthreads_or), warp
 * shuffles exchanged at warp granularity, per-block __shared__ (blocks run one
 * at a time, so a function-level static is the block's shared memory), atomics
 * and the IEEE intrinsics. `k<<<g, b, s, st>>>(args)` is rewritten by
 * build.sh's preprocessing step into `bf_sim_launcher(k, g, b, s, st)(args)`.
 * The real CUDA headers give the types; sim_runtime.cpp implements the
 * runtime, sim_blas.cpp / sim_dnn.cpp stand in for cuBLAS and cuDNN. */
#ifndef BF_SIM_DEVICE_H
#define BF_SIM_DEVICE_H

#ifdef __cplusplus
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>

extern "C" {
/* the running thread's coordinates, set by the scheduler before each switch */
extern uint3 bf_sim_threadIdx, bf_sim_blockIdx;
extern dim3 bf_sim_blockDim, bf_sim_gridDim;
void bf_sim_syncthreads(void);
int bf_sim_syncthreads_or(int pred);
/* warp exchange: publish bits, wait for the warp, read src_lane's bits */
uint64_t bf_sim_shfl(uint64_t bits, int src_lane, int width);
/* 0: launch may run; else the cudaError_t of a bad configuration (recorded) */
int bf_sim_launch_check(dim3 g, dim3 b, size_t shmem, cudaStream_t st, const char *name);
/* 1 if p (non-NULL) is not inside a live device allocation or registered host range */
int bf_sim_bad_pointer(const void *p);
void bf_sim_fault(int err, const char *name, const char *why);
/* run the grid on stream st (now or when the stream runs it: sim_streams.cpp):
 * body(ctx) once per CUDA thread, block by block; drop(ctx) after */
void bf_sim_submit_grid(cudaStream_t st, dim3 g, dim3 b, void (*body)(void *), void *ctx, void (*drop)(void *),
                        const char *name);
void bf_sim_check_address(const volatile void *p, size_t n);
/* BF_SIM_INTERLEAVE=1: let the block's other threads run (sim_runtime.cpp) */
void bf_sim_yield(void);
}

#define threadIdx bf_sim_threadIdx
#define blockIdx bf_sim_blockIdx
#define blockDim bf_sim_blockDim
#define gridDim bf_sim_gridDim
#define warpSize 32

/* blocks run one at a time: a static is the running block's shared memory;
 * all of them live in one section, which BF_SIM_NAN_FILL=1 fills with NaN
 * before every block (a read of shared memory the block did not write) */
#undef __shared__
#define __shared__ static __attribute__((section("bf_sim_shared")))

static inline void __syncthreads(void) { bf_sim_syncthreads(); }
static inline int __syncthreads_or(int pred) { return bf_sim_syncthreads_or(pred); }
static inline void __syncwarp(unsigned = 0xffffffffu) {}
static inline void __threadfence(void) {}

template <class T> static inline T bf_sim_shfl_t(T v, int src, int width) {
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    b = bf_sim_shfl(b, src, width);
    T r;
    memcpy(&r, &b, sizeof r);
    return r;
}
static inline int bf_sim_lane(void) {
    return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const int lane = bf_sim_lane();
    return bf_sim_shfl_t(v, (lane & ~(width - 1)) | ((lane % width) ^ mask), width);
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const int lane = bf_sim_lane();
    return bf_sim_shfl_t(v, (lane & ~(width - 1)) | (src % width), width);
}
template <class T> static inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
    const int lane = bf_sim_lane(), l = lane % width;
    return bf_sim_shfl_t(v, l + (int)d < width ? lane + (int)d : lane, width);
}
template <class T> static inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
    const int lane = bf_sim_lane(), l = lane % width;
    return bf_sim_shfl_t(v, l - (int)d >= 0 ? lane - (int)d : lane, width);
}

/* one host thread runs every CUDA thread: an atomic is a plain read-modify-write
 * no other thread runs inside (not instrumented in an INTERLEAVE=1 build);
 * under BF_SIM_INTERLEAVE=1 the others run first */
#define BF_SIM_ATOMIC static inline __attribute__((no_sanitize_thread))
template <class T, class U> BF_SIM_ATOMIC T atomicAdd(T *p, U v) {
    bf_sim_yield();
    bf_sim_check_address(p, sizeof *p);
    T old = *p;
    *p = (T)(old + (T)v);
    return old;
}
template <class T, class U> BF_SIM_ATOMIC T atomicMax(T *p, U v) {
    bf_sim_yield();
    bf_sim_check_address(p, sizeof *p);
    T old = *p;
    if ((T)v > old) *p = (T)v;
    return old;
}
template <class T, class U> BF_SIM_ATOMIC T atomicMin(T *p, U v) {
    bf_sim_yield();
    bf_sim_check_address(p, sizeof *p);
    T old = *p;
    if ((T)v < old) *p = (T)v;
    return old;
}
template <class T, class U> BF_SIM_ATOMIC T atomicExch(T *p, U v) {
    bf_sim_yield();
    bf_sim_check_address(p, sizeof *p);
    T old = *p;
    *p = (T)v;
    return old;
}

/* round-to-nearest intrinsics: never contracted into an FMA, as nvcc
 * guarantees (the empty asm holds the rounded result, so a build with
 * FP_CONTRACT=fast cannot fuse it with what follows) */
#define BF_SIM_ROUNDED(r) __asm__("" : "+x"(r))
static inline float __fmul_rn(float a, float b) { float r = a * b; BF_SIM_ROUNDED(r); return r; }
static inline float __fadd_rn(float a, float b) { float r = a + b; BF_SIM_ROUNDED(r); return r; }
static inline float __fsub_rn(float a, float b) { float r = a - b; BF_SIM_ROUNDED(r); return r; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dmul_rn(double a, double b) { double r = a * b; BF_SIM_ROUNDED(r); return r; }
static inline double __dadd_rn(double a, double b) { double r = a + b; BF_SIM_ROUNDED(r); return r; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
template <class T> static inline T __ldg(const T *p) { return *p; }

/* CUDA's device min / max overloads */
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline long min(long a, long b) { return a < b ? a : b; }
static inline long max(long a, long b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }

/* ---- launches ---- */
template <class... A> struct bf_sim_call {
    void (*k)(A...);
    std::tuple<A...> args;
    static void run(void *c) {
        bf_sim_call *self = (bf_sim_call *)c;
        std::apply(self->k, self->args);
    }
    static void drop(void *c) { delete (bf_sim_call *)c; }
};

template <class T> static inline int bf_sim_arg_bad(const T &v) {
    if constexpr (std::is_pointer<T>::value) return v && bf_sim_bad_pointer((const void *)v);
    else return 0;
}

template <class... P> struct bf_sim_launch_t {
    void (*k)(P...);
    dim3 g, b;
    size_t s;
    cudaStream_t st;
    const char *name;
    template <class... A> void operator()(A &&...a) const {
        if (bf_sim_launch_check(g, b, s, st, name)) return;
        bf_sim_call<P...> c{k, std::tuple<P...>((P)std::forward<A>(a)...)};
        int bad = 0;
        std::apply([&](const P &...v) { bad = (bf_sim_arg_bad(v) + ... + 0); }, c.args);
        if (bad) {
            bf_sim_fault(cudaErrorIllegalAddress, name, "a pointer argument outside every live device allocation");
            return;
        }
        bf_sim_submit_grid(st, g, b, &bf_sim_call<P...>::run, new bf_sim_call<P...>(c), &bf_sim_call<P...>::drop,
                           name);
    }
};

template <class... P>
static inline bf_sim_launch_t<P...> bf_sim_launch_make(void (*k)(P...), const char *name, dim3 g, dim3 b,
                                                       size_t s = 0, cudaStream_t st = 0) {
    return bf_sim_launch_t<P...>{k, g, b, s, st, name};
}
#define bf_sim_launcher(k, ...) bf_sim_launch_make(k, #k, __VA_ARGS__)

#endif /* __cplusplus */
#endif
