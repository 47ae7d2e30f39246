/* image_resize.h - an 8-bit image (H,W,C) resized to float32 (th,tw,C) as
 * TensorFlow's tf.image.resize (antialias=False) does it for 'bilinear' and
 * 'nearest' (half-pixel centers), in float32 arithmetic; any strides, so a
 * crop of the source and a row / window / channels-first view of a batch
 * are read and written in place. Nothing is allocated. */
#ifndef BF_IMAGE_RESIZE_H
#define BF_IMAGE_RESIZE_H

#include <stddef.h>

#include "status.h"

typedef enum { BF_RESIZE_BILINEAR = 0, BF_RESIZE_NEAREST = 1 } bf_resize_mode;

/* out (th,tw,C) float32 at element strides os[3]; inp (H,W,C) uint8 at element strides is[3]. */
bf_status bf_cpu_image_resize(float *out, const unsigned char *inp, long H, long W, long C, const ptrdiff_t is[3],
                              long th, long tw, const ptrdiff_t os[3], bf_resize_mode mode);

#endif
