/* status.h - error codes and the fixed error buffer.
 * Every fallible engine function returns a bf_status. The failing site records
 * code, file:line and a message into a thread-local fixed buffer (recording an
 * error never allocates). csrc/python/ turns it into a Python exception. */
#ifndef BF_STATUS_H
#define BF_STATUS_H

#include <stdarg.h>

typedef enum {
    BF_OK = 0,
    BF_ERR_BUDGET,      /* plan does not fit the memory budget */
    BF_ERR_NOMEM,       /* an allocation failed (real or injected) */
    BF_ERR_SHAPE,       /* tensor shapes do not agree */
    BF_ERR_ARG,         /* bad argument value */
    BF_ERR_DATA,        /* bad input data (labels out of range, dtype) */
    BF_ERR_DEVICE,      /* CUDA / driver / cuDNN problem */
    BF_ERR_NONFINITE,   /* NaN or Inf in loss or gradients */
    BF_ERR_INTERRUPTED, /* stopped at a step boundary on request */
    BF_ERR_INTERNAL,    /* a bug in boundfit */
    BF_ERR_DIST         /* the process group failed: a peer died, timed out or disagreed (dist_mpi.c, dist_tcp.c) */
} bf_status;

#define BF_MSG_LEN 1024

typedef struct {
    bf_status code;
    const char *file;
    int line;
    char msg[BF_MSG_LEN];
} bf_error;

/* Record an error in this thread's buffer and return code. */
bf_status bf_fail(bf_status code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* va_list form, handed to the CUDA module (csrc/cuda/cuda_api.h) */
bf_status bf_vfail(bf_status code, const char *file, int line, const char *fmt, va_list ap);
/* This thread's last recorded error. */
const bf_error *bf_last_error(void);
/* Copy an error (e.g. from a worker thread) into this thread's buffer. */
bf_status bf_set_error(const bf_error *e);
void bf_clear_error(void);
const char *bf_status_name(bf_status s);

#define BF_FAIL(code, ...) bf_fail((code), __FILE__, __LINE__, __VA_ARGS__)
#define BF_TRY(expr)                         \
    do {                                     \
        bf_status bf_try_s_ = (expr);        \
        if (bf_try_s_ != BF_OK) return bf_try_s_; \
    } while (0)

#endif
