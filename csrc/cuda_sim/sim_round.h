/* sim_round.h - how the emulated tensor cores take a float32 operand: rounded
 * to bfloat16 or float16 (nearest even, core/half.h: the CPU's and
 * half.cu's bits) or TF32 (10 mantissa bits, nearest with ties away, as
 * cvt.rna.tf32.f32), for the cuBLAS and cuDNN stand-ins' fast math. */
#ifndef BF_SIM_ROUND_H
#define BF_SIM_ROUND_H

#include <stddef.h>
#include <vector>

#include "half.h"

enum sim_tc { SIM_TC_NONE = 0, SIM_TC_BF16, SIM_TC_F16, SIM_TC_TF32 };

static inline float sim_tc_round(float v, sim_tc t) {
    switch (t) {
    case SIM_TC_BF16: return bf_bf16_expand(bf_bf16_round(v));
    case SIM_TC_F16: return bf_f16_expand(bf_f16_round(v));
    case SIM_TC_TF32: {
        uint32_t u = bf_half_bits(v);
        if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
        return bf_half_from_bits(u);
    }
    default: return v;
    }
}

/* the n floats at p as the tensor cores take them: p itself, or a rounded copy in buf */
static inline const float *sim_tc_operand(std::vector<float> &buf, const float *p, size_t n, sim_tc t) {
    if (t == SIM_TC_NONE || !n) return p;
    buf.assign(p, p + n);
    for (float &v : buf) v = sim_tc_round(v, t);
    return buf.data();
}

#endif
