/* gather.c - row gather with dtype conversion (see gather.h).
 * Fast path: a C-contiguous row is one run, converted in a loop per dtype (a
 * memcpy for float32). Otherwise each row is walked with its strides, a
 * contiguous last axis converted as one run. Packed rows are
 * filled source by source (each one's rows into its columns). */
#include "gather.h"

#include <string.h>

static inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
    if (exp == 0) {
        if (man == 0) f = sign;
        else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            man &= 0x3ff;
            f = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) f = sign | 0x7f800000u | (man << 13);
    else f = sign | ((exp - 15 + 127) << 23) | (man << 13);
    float out;
    memcpy(&out, &f, 4);
    return out;
}

static inline float load(const char *p, bf_dtype t) {
    switch (t) {
    case BF_DT_F32: { float v; memcpy(&v, p, 4); return v; }
    case BF_DT_F64: { double v; memcpy(&v, p, 8); return (float)v; }
    case BF_DT_F16: { uint16_t v; memcpy(&v, p, 2); return half_to_float(v); }
    case BF_DT_I8: return (float)*(const int8_t *)p;
    case BF_DT_I16: { int16_t v; memcpy(&v, p, 2); return (float)v; }
    case BF_DT_I32: { int32_t v; memcpy(&v, p, 4); return (float)v; }
    case BF_DT_I64: { int64_t v; memcpy(&v, p, 8); return (float)v; }
    case BF_DT_U8: return (float)*(const uint8_t *)p;
    case BF_DT_U16: { uint16_t v; memcpy(&v, p, 2); return (float)v; }
    case BF_DT_U32: { uint32_t v; memcpy(&v, p, 4); return (float)v; }
    case BF_DT_U64: { uint64_t v; memcpy(&v, p, 8); return (float)v; }
    case BF_DT_BOOL: return *(const uint8_t *)p ? 1.0f : 0.0f;
    }
    return 0.0f;
}

static int itemsize(bf_dtype t) {
    switch (t) {
    case BF_DT_F64: case BF_DT_I64: case BF_DT_U64: return 8;
    case BF_DT_F32: case BF_DT_I32: case BF_DT_U32: return 4;
    case BF_DT_F16: case BF_DT_I16: case BF_DT_U16: return 2;
    default: return 1;
    }
}

/* o (n) = float(p (n contiguous elements of type t)): one tight loop per type */
static void convert(float *o, const char *p, bf_dtype t, int64_t n) {
#define BF_CONV(T) for (int64_t i = 0; i < n; i++) { T v; memcpy(&v, p + i * (int64_t)sizeof(T), sizeof(T)); o[i] = (float)v; } break
    switch (t) {
    case BF_DT_F32: memcpy(o, p, (size_t)n * 4); break;
    case BF_DT_F64: BF_CONV(double);
    case BF_DT_I8: BF_CONV(int8_t);
    case BF_DT_I16: BF_CONV(int16_t);
    case BF_DT_I32: BF_CONV(int32_t);
    case BF_DT_I64: BF_CONV(int64_t);
    case BF_DT_U8: BF_CONV(uint8_t);
    case BF_DT_U16: BF_CONV(uint16_t);
    case BF_DT_U32: BF_CONV(uint32_t);
    case BF_DT_U64: BF_CONV(uint64_t);
    default: for (int64_t i = 0; i < n; i++) o[i] = load(p + i * itemsize(t), t); break; /* f16, bool */
    }
#undef BF_CONV
}

/* walk dims [d, ndim) of one row, writing floats to *out; a contiguous last
 * axis is converted in one run */
static void walk(float **out, const char *p, const bf_src *s, int d) {
    if (d == s->ndim) { *(*out)++ = load(p, s->dtype); return; }
    if (d == s->ndim - 1 && s->strides[d] == itemsize(s->dtype)) {
        convert(*out, p, s->dtype, s->shape[d]);
        *out += s->shape[d];
        return;
    }
    for (int64_t i = 0; i < s->shape[d]; i++) walk(out, p + i * s->strides[d], s, d + 1);
}

// dst (n, ld) columns [0, row_elems) = float(src[idx[0..n)])
bf_status bf_gather_rows(float *dst, long ld, const bf_src *src, const int64_t *idx, long n) {
    int contiguous = 1; /* each row one run of row_elems elements */
    int64_t expect = itemsize(src->dtype);
    for (int d = src->ndim - 1; d >= 1; d--) {
        if (src->shape[d] != 1 && src->strides[d] != expect) contiguous = 0;
        expect *= src->shape[d];
    }
    for (long k = 0; k < n; k++) {
        int64_t r = idx[k];
        if (r < 0 || r >= src->shape[0])
            return BF_FAIL(BF_ERR_INTERNAL, "row %lld out of range [0, %lld)", (long long)r,
                           (long long)src->shape[0]);
        const char *p = src->data + r * src->strides[0];
        float *o = dst + (size_t)k * (size_t)ld;
        if (contiguous) convert(o, p, src->dtype, src->row_elems);
        else walk(&o, p, src, 1);
    }
    return BF_OK;
}

// dst (n, s->row) = the sources' rows idx[0..n) side by side
bf_status bf_gather_packed(float *dst, const bf_srcs *s, const int64_t *idx, long n) {
    for (int k = 0; k < s->n; k++) BF_TRY(bf_gather_rows(dst + s->off[k], s->row, &s->src[k], idx, n));
    return BF_OK;
}

int64_t bf_srcs_rows(const bf_srcs *s) {
    int64_t n = s->n ? s->src[0].shape[0] : 0;
    for (int k = 1; k < s->n; k++)
        if (s->src[k].shape[0] < n) n = s->src[k].shape[0];
    return n;
}
