/* rowops.c - picks the row kernels' table (rowops.h) for the instruction
 * set in use (cpu_isa.h). */
#include "rowops.h"

#include "cpu_isa.h"

const bf_rowops_t *bf_rowops(void) {
    const bf_isa isa = bf_cpu_isa();
    return isa >= BF_ISA_AVX512 ? &bf_rowops_avx512 : isa == BF_ISA_AVX2 ? &bf_rowops_avx2 : &bf_rowops_scalar;
}
