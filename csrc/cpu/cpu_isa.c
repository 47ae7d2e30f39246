/* cpu_isa.c - run-time choice of the CPU kernels' instruction set (cpu_isa.h):
 * cpuid through __builtin_cpu_supports (which also checks that the OS saves
 * the wide registers), capped by BF_CPU_ISA. Read once, then cached. */
#include <stdlib.h>
#include <string.h>

#include "cpu_isa.h"

static int detected = -1, chosen = -1;

bf_isa bf_cpu_isa_detected(void) {
    if (detected < 0) {
        int d = BF_ISA_SCALAR;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) d = BF_ISA_AVX2;
        if (d == BF_ISA_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
            d = BF_ISA_AVX512;
#endif
        detected = d;
    }
    return (bf_isa)detected;
}

static int from_env(void) {
    const char *e = getenv("BF_CPU_ISA");
    if (!e || !*e) return -1;
    if (!strcmp(e, "scalar")) return BF_ISA_SCALAR;
    if (!strcmp(e, "avx2")) return BF_ISA_AVX2;
    if (!strcmp(e, "avx512")) return BF_ISA_AVX512;
    return -1; /* unknown: ignored, as an unset variable */
}

static int capped(int want) {
    const int d = (int)bf_cpu_isa_detected();
    return want < 0 || want > d ? d : want;
}

bf_isa bf_cpu_isa(void) {
    if (chosen < 0) chosen = capped(from_env());
    return (bf_isa)chosen;
}

bf_isa bf_cpu_isa_set(int isa) {
    chosen = capped(isa < 0 ? from_env() : isa);
    return (bf_isa)chosen;
}

const char *bf_cpu_isa_name(bf_isa isa) {
    return isa == BF_ISA_AVX512 ? "avx512" : isa == BF_ISA_AVX2 ? "avx2" : "scalar";
}
