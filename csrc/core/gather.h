/* gather.h - batch assembly: rows of strided source arrays of any real dtype,
 * picked by an index list, converted to float32 into an arena batch buffer.
 * The sources are the user's arrays (or memmaps) used in place: no full copy.
 * Several sources (one per model input, or per output's labels) are gathered
 * side by side into the packed rows of one batch buffer. A memory-mapped
 * source (bf_src.mapped) is copied with process_vm_readv on this process
 * instead of plain loads: a page past the end of a file truncated meanwhile
 * makes the copy fail (EFAULT) instead of killing the process with SIGBUS. */
#ifndef BF_GATHER_H
#define BF_GATHER_H

#include <stdint.h>

#include "status.h"

typedef enum {
    BF_DT_F32 = 0, BF_DT_F64, BF_DT_F16, BF_DT_I8, BF_DT_I16, BF_DT_I32, BF_DT_I64,
    BF_DT_U8, BF_DT_U16, BF_DT_U32, BF_DT_U64, BF_DT_BOOL
} bf_dtype;

#define BF_SRC_MAXDIM 8

typedef struct {
    const char *data;
    bf_dtype dtype;
    int ndim;                       /* ndim >= 1; axis 0 is the sample axis */
    int64_t shape[BF_SRC_MAXDIM];
    int64_t strides[BF_SRC_MAXDIM]; /* bytes */
    int64_t row_elems;              /* product of shape[1:] */
    int mapped;                     /* the bytes are a memory-mapped file's: read through the kernel, so that
                                       a file truncated under the run fails the read (BF_ERR_DATA) where a
                                       plain load would raise SIGBUS */
} bf_src;

/* sources of one batch: one per model input (model.h BF_MAX_INPUTS) or output's labels; run.c checks the bound */
#define BF_SRCS_MAX 256

/* sources side by side: source k fills columns [off[k], off[k] + its
 * row_elems) of packed rows of `row` floats */
typedef struct {
    int n;
    bf_src src[BF_SRCS_MAX];
    long off[BF_SRCS_MAX];
    long row;
} bf_srcs;

// dst (n, ld) columns [0, row_elems) = float(src[idx[0..n)])
bf_status bf_gather_rows(float *dst, long ld, const bf_src *src, const int64_t *idx, long n);
// dst (n, s->row) = the sources' rows idx[0..n) side by side
bf_status bf_gather_packed(float *dst, const bf_srcs *s, const int64_t *idx, long n);
/* rows every source holds (the smallest first dimension) */
int64_t bf_srcs_rows(const bf_srcs *s);

#endif
