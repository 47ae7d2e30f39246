/* cuda_shim.h - hand the core's error recorder to status_shim.c (C linkage). */
#ifndef BF_CUDA_SHIM_H
#define BF_CUDA_SHIM_H

#include "cuda_api.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Set the recorder bf_fail forwards to (kept when host or host->vfail is NULL). */
void bf_cuda_shim_set(const bf_cuda_host *host);
#ifdef __cplusplus
}
#endif

#endif
