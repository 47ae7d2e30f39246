/* cpu_isa.h - the vector instruction set the hand-written CPU kernels run on
 * (conv2d_direct.c; LayerNorm's and the softmax's rows, rowops.c), chosen
 * once per process at run time: the best the CPU
 * and OS support (cpuid via __builtin_cpu_supports), capped by the
 * environment variable BF_CPU_ISA=scalar|avx2|avx512 (tests force each
 * path with it, or with bf_cpu_isa_set in the standalone C tests).
 * Invariant: the choice must not change between planning a workspace and
 * running the op that uses it, so the engine reads it once and keeps it. */
#ifndef BF_CPU_ISA_H
#define BF_CPU_ISA_H

typedef enum { BF_ISA_SCALAR = 0, BF_ISA_AVX2 = 1, BF_ISA_AVX512 = 2 } bf_isa;

/* the instruction set in use: detected, capped by BF_CPU_ISA or bf_cpu_isa_set */
bf_isa bf_cpu_isa(void);
/* the best the machine supports (AVX2 means AVX2 + FMA; AVX-512 means F + VL) */
bf_isa bf_cpu_isa_detected(void);
/* tests only: cap the instruction set (-1: back to BF_CPU_ISA / detection);
 * returns what bf_cpu_isa() now gives */
bf_isa bf_cpu_isa_set(int isa);
/* "scalar", "avx2", "avx512" */
const char *bf_cpu_isa_name(bf_isa isa);

#endif
