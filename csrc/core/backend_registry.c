/* backend_registry.c - backend lookup (cpu, emu, cuda:N) and lazy loading of
 * the CUDA backend. */
#include "backend_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the backends of csrc/cpu this build links (their own header is cpu_ops.h;
 * the core includes no backend header) */
bf_backend *bf_cpu_backend(void);
bf_backend *bf_emu_backend(void);
void bf_emu_mem_info(size_t *free_bytes, size_t *total_bytes);

bf_backend *bf_backend_host(void) { return bf_cpu_backend(); }

static int tf32 = 1;
void bf_backend_set_tf32(int on) { tf32 = on != 0; }
int bf_backend_tf32(void) { return tf32; }

bf_status bf_backend_get(const char *device, bf_backend **out) {
    *out = NULL;
    if (!device || !*device || !strcmp(device, "cpu")) {
        *out = bf_cpu_backend();
        return BF_OK;
    }
    if (!strcmp(device, "emu") || !strcmp(device, "emu:0")) {
        *out = bf_emu_backend();
        return BF_OK;
    }
    if (!strncmp(device, "cuda", 4)) {
        int idx = 0;
        if (device[4] == ':') {
            char *end = NULL;
            long v = strtol(device + 5, &end, 10);
            if (!end || *end || end == device + 5 || v < 0 || v > 63)
                return BF_FAIL(BF_ERR_ARG, "device '%s' is not of the form 'cuda' or 'cuda:N'", device);
            idx = (int)v;
        } else if (device[4]) {
            return BF_FAIL(BF_ERR_ARG, "device '%s' is not of the form 'cuda' or 'cuda:N'", device);
        }
        return bf_cuda_load_backend(idx, out);
    }
    return BF_FAIL(BF_ERR_ARG, "unknown device '%s' (use 'cpu', 'cuda' or 'cuda:N')", device);
}

bf_status bf_backend_mem_info(bf_backend *be, size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    if (be == bf_cpu_backend()) return BF_OK;
    if (be == bf_emu_backend()) {
        bf_emu_mem_info(free_bytes, total_bytes);
        return BF_OK;
    }
    return bf_cuda_loaded_mem_info(be, free_bytes, total_bytes);
}
