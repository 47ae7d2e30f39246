/* rowops_avx2.c - the row kernels (rowops_kern.h) for AVX2 + FMA: 8 floats a vector,
 * whatever the build's -march; used only when cpu_isa.h says the CPU has it. */
#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#endif

#define SFX avx2
#define VL 8
#define DL 8
#include "rowops_kern.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
