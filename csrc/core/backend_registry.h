/* backend_registry.h - device names ("cpu", "cuda", "cuda:N") to backends.
 * The CUDA backend is a separate shared object loaded on first use, so the
 * module imports on machines without a driver or CUDA libraries. The
 * backends a build links are registered in backend_registry.c and nowhere
 * else: the core reaches them through this lookup, never by name. */
#ifndef BF_BACKEND_REGISTRY_H
#define BF_BACKEND_REGISTRY_H

#include "backend.h"
#include "cuda_loader.h" /* the CUDA report and loader settings */

bf_status bf_backend_get(const char *device, bf_backend **out);
/* Free / total bytes of a device backend (cpu: 0, 0). */
bf_status bf_backend_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes);
/* The host's backend (the CPU's ops and memory): model weights, optimizer
 * state and a device run's pinned batch slots live in its arenas. */
bf_backend *bf_backend_host(void);
/* whether float32 GEMMs and convolutions of the runs planned from now on may use TF32 (bf.config.enable_tf32;
 * on by default, as JAX's default precision on GPUs); a run keeps the setting it was planned with */
void bf_backend_set_tf32(int on);
int bf_backend_tf32(void);

#endif
