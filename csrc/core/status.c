/* status.c - the thread-local error buffer behind bf_fail / bf_last_error. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local bf_error bf_err_tls;

bf_status bf_vfail(bf_status code, const char *file, int line, const char *fmt, va_list ap) {
    bf_err_tls.code = code;
    bf_err_tls.file = file;
    bf_err_tls.line = line;
    vsnprintf(bf_err_tls.msg, sizeof bf_err_tls.msg, fmt, ap);
    return code;
}

bf_status bf_fail(bf_status code, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_status s = bf_vfail(code, file, line, fmt, ap);
    va_end(ap);
    return s;
}

const bf_error *bf_last_error(void) { return &bf_err_tls; }

bf_status bf_set_error(const bf_error *e) {
    if (e != &bf_err_tls) memcpy(&bf_err_tls, e, sizeof *e);
    return e->code;
}

void bf_clear_error(void) {
    bf_err_tls.code = BF_OK;
    bf_err_tls.file = "";
    bf_err_tls.line = 0;
    bf_err_tls.msg[0] = '\0';
}

const char *bf_status_name(bf_status s) {
    switch (s) {
    case BF_OK: return "ok";
    case BF_ERR_BUDGET: return "budget";
    case BF_ERR_NOMEM: return "out of memory";
    case BF_ERR_SHAPE: return "shape";
    case BF_ERR_ARG: return "argument";
    case BF_ERR_DATA: return "data";
    case BF_ERR_DEVICE: return "device";
    case BF_ERR_NONFINITE: return "non-finite";
    case BF_ERR_INTERRUPTED: return "interrupted";
    case BF_ERR_INTERNAL: return "internal";
    case BF_ERR_DIST: return "distributed";
    }
    return "unknown";
}
