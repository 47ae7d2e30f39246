/* gather.h - batch assembly: rows of a strided source array of any real dtype,
 * picked by an index list, converted to float32 into an arena batch buffer.
 * The source is the user's array (or memmap) used in place: no full copy. */
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
} bf_src;

// dst (n, row_elems) = float(src[idx[0..n)])
bf_status bf_gather_rows(float *dst, const bf_src *src, const int64_t *idx, long n);

#endif
