/* status_shim.c - bf_fail for the CUDA module. The thread-local error buffer
 * lives in the core (status.c, not linked here): bf_cuda_open receives the
 * core's vfail and every bf_fail / BF_FAIL of the module forwards to it.
 * Before that (or with no recorder) the status code is returned unrecorded.
 * Hidden: the module exports only the entry points of cuda_api.h. */
#include <stdarg.h>
#include <stddef.h>

#include "cuda_shim.h"
#include "status.h"

typedef bf_status (*bf_vfail_fn)(bf_status, const char *, int, const char *, va_list);

static bf_vfail_fn host_vfail;

__attribute__((visibility("hidden"))) void bf_cuda_shim_set(const bf_cuda_host *host) {
    if (host && host->vfail) host_vfail = host->vfail;
}

__attribute__((visibility("hidden"))) bf_status bf_fail(bf_status code, const char *file, int line,
                                                        const char *fmt, ...) {
    bf_status r = code;
    if (host_vfail) {
        va_list ap;
        va_start(ap, fmt);
        r = host_vfail(code, file, line, fmt, ap);
        va_end(ap);
    }
    return r;
}
