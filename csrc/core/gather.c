/* gather.c - row gather with dtype conversion (see gather.h).
 * Fast path: a C-contiguous row is one run, converted in a loop per dtype (a
 * memcpy for float32). Otherwise each row is walked with its strides, a
 * contiguous last axis converted as one run. Packed rows are
 * filled source by source (each one's rows into its columns). A memory-mapped
 * source's bytes are copied through the kernel (process_vm_readv on this
 * process, BF_IOVS rows a call; float32 rows straight into the batch, others
 * through a stack stage) before they are converted: a truncated file fails
 * the copy instead of faulting. Where the call is refused (seccomp, ENOSYS)
 * mapped rows are loaded directly, as other arrays are. */
#define _GNU_SOURCE /* process_vm_readv */
#include "gather.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define BF_STAGE 16384 /* bytes of a mapped source staged on the stack per copy */
#define BF_IOVS 64     /* rows of a mapped source per copy */

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

/* 1 once process_vm_readv was refused: mapped rows are loaded directly from then on */
static atomic_int no_vm_readv;

/* to[k] = from[k] for k < n (same lengths), copied through the kernel */
static bf_status copy_mapped(struct iovec *to, struct iovec *from, int n) {
    size_t total = 0;
    for (int k = 0; k < n; k++) total += from[k].iov_len;
#ifdef __linux__
    if (!atomic_load(&no_vm_readv)) {
        ssize_t got = process_vm_readv(getpid(), to, (unsigned long)n, from, (unsigned long)n, 0);
        if (got == (ssize_t)total) return BF_OK;
        if (got >= 0 || errno == EFAULT)
            return BF_FAIL(BF_ERR_DATA, "a memory-mapped array's file is shorter than when it was mapped (truncated "
                           "while in use?): %lld of %zu bytes of its rows could be read",
                           (long long)(got > 0 ? got : 0), total);
        if (errno != ENOSYS && errno != EPERM)
            return BF_FAIL(BF_ERR_DATA, "reading a memory-mapped array failed (process_vm_readv errno %d)", errno);
        atomic_store(&no_vm_readv, 1);
    }
#endif
    for (int k = 0; k < n; k++) memcpy(to[k].iov_base, from[k].iov_base, from[k].iov_len);
    return BF_OK;
}

/* walk (above) of a mapped row: a block of dims [d, ndim) whose bytes fit the
 * stage is copied there and walked; a longer contiguous last axis is copied
 * and converted in pieces; otherwise each index of dim d in turn */
static bf_status walk_mapped(float **out, const char *p, const bf_src *s, int d, char *stage) {
    const int64_t isz = itemsize(s->dtype);
    int64_t lo = 0, hi = isz; /* the block's bytes: [p + lo, p + hi) */
    for (int k = d; k < s->ndim; k++) {
        int64_t span = (s->shape[k] - 1) * s->strides[k];
        if (span < 0) lo += span;
        else hi += span;
    }
    if (hi - lo <= BF_STAGE) {
        struct iovec to = {stage, (size_t)(hi - lo)}, from = {(void *)(p + lo), (size_t)(hi - lo)};
        BF_TRY(copy_mapped(&to, &from, 1));
        walk(out, stage - lo, s, d);
        return BF_OK;
    }
    if (d == s->ndim - 1 && s->strides[d] == isz) {
        for (int64_t i = 0, per = BF_STAGE / isz; i < s->shape[d]; i += per) {
            int64_t c = s->shape[d] - i < per ? s->shape[d] - i : per;
            struct iovec to = {stage, (size_t)(c * isz)}, from = {(void *)(p + i * isz), (size_t)(c * isz)};
            BF_TRY(copy_mapped(&to, &from, 1));
            convert(*out, stage, s->dtype, c);
            *out += c;
        }
        return BF_OK;
    }
    for (int64_t i = 0; i < s->shape[d]; i++) BF_TRY(walk_mapped(out, p + i * s->strides[d], s, d + 1, stage));
    return BF_OK;
}

/* bf_gather_rows of a mapped source (rows checked already): contiguous rows
 * BF_IOVS a copy, float32 ones straight into dst, others staged and
 * converted; other rows walked one by one (walk_mapped) */
static bf_status gather_mapped(float *dst, long ld, const bf_src *src, const int64_t *idx, long n, int contiguous) {
    const int f32 = src->dtype == BF_DT_F32;
    const int64_t row_bytes = src->row_elems * itemsize(src->dtype);
    char stage[BF_STAGE];
    struct iovec to[BF_IOVS], from[BF_IOVS];
    if (row_bytes == 0) return BF_OK;
    if (contiguous && (f32 || row_bytes <= BF_STAGE)) {
        const long per = f32 || BF_STAGE / row_bytes > BF_IOVS ? BF_IOVS : (long)(BF_STAGE / row_bytes);
        for (long k0 = 0; k0 < n; k0 += per) {
            const long c = n - k0 < per ? n - k0 : per;
            for (long j = 0; j < c; j++) {
                from[j].iov_base = (void *)(src->data + idx[k0 + j] * src->strides[0]);
                to[j].iov_base = f32 ? (void *)(dst + (size_t)(k0 + j) * (size_t)ld) : (void *)(stage + j * row_bytes);
                from[j].iov_len = to[j].iov_len = (size_t)row_bytes;
            }
            BF_TRY(copy_mapped(to, from, (int)c));
            for (long j = 0; !f32 && j < c; j++)
                convert(dst + (size_t)(k0 + j) * (size_t)ld, stage + j * row_bytes, src->dtype, src->row_elems);
        }
        return BF_OK;
    }
    for (long k = 0; k < n; k++) {
        float *o = dst + (size_t)k * (size_t)ld;
        BF_TRY(walk_mapped(&o, src->data + idx[k] * src->strides[0], src, 1, stage));
    }
    return BF_OK;
}

static bf_status row_range(int64_t r, const bf_src *src) {
    if (r < 0 || r >= src->shape[0])
        return BF_FAIL(BF_ERR_INTERNAL, "row %lld out of range [0, %lld)", (long long)r, (long long)src->shape[0]);
    return BF_OK;
}

// dst (n, ld) columns [0, row_elems) = float(src[idx[0..n)])
bf_status bf_gather_rows(float *dst, long ld, const bf_src *src, const int64_t *idx, long n) {
    int contiguous = 1; /* each row one run of row_elems elements */
    int64_t expect = itemsize(src->dtype);
    for (int d = src->ndim - 1; d >= 1; d--) {
        if (src->shape[d] != 1 && src->strides[d] != expect) contiguous = 0;
        expect *= src->shape[d];
    }
    if (src->mapped) {
        for (long k = 0; k < n; k++) BF_TRY(row_range(idx[k], src));
        return gather_mapped(dst, ld, src, idx, n, contiguous);
    }
    for (long k = 0; k < n; k++) {
        int64_t r = idx[k];
        BF_TRY(row_range(r, src));
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
