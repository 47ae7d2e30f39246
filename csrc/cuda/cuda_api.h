/* cuda_api.h - the CUDA module's side of the core's ABI: the declarations
 * live in the core (csrc/core/cuda_abi.h), which owns the contract. */
#ifndef BF_CUDA_API_FWD_H
#define BF_CUDA_API_FWD_H
#include "../core/cuda_abi.h"
#endif
