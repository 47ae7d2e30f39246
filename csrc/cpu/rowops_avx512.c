/* rowops_avx512.c - the row kernels (rowops_kern.h) for AVX-512 (F + VL): 16 floats a vector,
 * whatever the build's -march; used only when cpu_isa.h says the CPU has it. */
#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma,prefer-vector-width=512")
#endif
#endif

#define SFX avx512
#define VL 16
#define DL 16
#include "rowops_kern.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
