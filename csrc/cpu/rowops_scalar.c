/* rowops_scalar.c - the row kernels (rowops_kern.h) for the build's baseline
 * instruction set (the CMake -march): the fallback when cpu_isa.h reports
 * neither AVX2 nor AVX-512, or BF_CPU_ISA=scalar. */
#define SFX scalar
#define VL 8
#define DL 8
#include "rowops_kern.h"
