/* dist_py.c - boundfit._core's distributed functions (dist_mpi.c; dist_tcp.c
 * for a torchrun-style launch): init, the
 * in-place collectives boundfit.distribute uses for planning, logs, weights
 * and seeds, and finalize. Buffers come through the buffer protocol (C
 * contiguous, writable where filled); waits run with the GIL released. */
#include <limits.h>

#include "glue.h"

#include "backend_registry.h"
#include "dist_mpi.h"
#include "dist_nccl.h"
#include "dist_overlap.h"
#include "dist_tcp.h"

static PyObject *dist_init(PyObject *self, PyObject *args) {
    const char *lib;
    double timeout;
    if (!PyArg_ParseTuple(args, "sd", &lib, &timeout)) return NULL;
    int rank = 0, size = 1;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_init(lib, timeout, &rank, &size);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    return Py_BuildValue("(ii)", rank, size);
}

/* dist_init_tcp(master_addr, master_port, rank, world_size, timeout): the
 * torchrun-style rendezvous (dist_tcp.c) -> (rank, size) */
static PyObject *dist_init_tcp(PyObject *self, PyObject *args) {
    const char *addr;
    int port, rank, size;
    double timeout;
    PyObject *nums[3];
    if (!PyArg_ParseTuple(args, "sOOOd", &addr, &nums[0], &nums[1], &nums[2], &timeout)) return NULL;
    if (bf_py_int(nums[0], "distributed", "MASTER_PORT", 1, 65535, &port) < 0 ||
        bf_py_int(nums[2], "distributed", "WORLD_SIZE", 1, INT_MAX, &size) < 0 ||
        bf_py_int(nums[1], "distributed", "RANK", 0, size - 1, &rank) < 0)
        return NULL;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_tcp_init(addr, port, rank, size, timeout);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    return Py_BuildValue("(ii)", bf_tcp_rank(), bf_tcp_size());
}

static PyObject *dist_info(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return Py_BuildValue("(iid)", bf_dist_rank(), bf_dist_size(), bf_dist_comm_seconds() + bf_nccl_seconds());
}

static PyObject *dist_set_timeout(PyObject *self, PyObject *args) {
    (void)self;
    double t;
    if (!PyArg_ParseTuple(args, "d", &t)) return NULL;
    if (!(t > 0)) return PyErr_Format(PyExc_ValueError, "timeout must be a positive number of seconds, got %g", t);
    bf_dist_set_timeout(t);
    Py_RETURN_NONE;
}

/* allreduce_f64(buf, op): a writable float64 buffer summed (0), max'ed (1) or min'ed (2) over ranks */
static PyObject *dist_allreduce_f64(PyObject *self, PyObject *args) {
    Py_buffer b;
    int op;
    PyObject *op_obj;
    if (!PyArg_ParseTuple(args, "w*O", &b, &op_obj)) return NULL;
    if (bf_py_int(op_obj, "dist_allreduce_f64", "op", 0, 2, &op) < 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    if (b.len % (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "buf must hold float64 values, got %zd bytes", b.len);
    }
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_allreduce_f64((double *)b.buf, (long)(b.len / (Py_ssize_t)sizeof(double)), op);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

/* bcast(buf, root): root's bytes into every rank's writable buffer of the same size */
static PyObject *dist_bcast(PyObject *self, PyObject *args) {
    Py_buffer b;
    int root;
    PyObject *root_obj;
    if (!PyArg_ParseTuple(args, "w*O", &b, &root_obj)) return NULL;
    if (bf_py_int(root_obj, "dist_bcast", "root", 0, bf_dist_size() - 1, &root) < 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_bcast(b.buf, (long)b.len, root);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

/* allgather(data: bytes) -> bytes: every rank's data (all the same length), in rank order */
static PyObject *dist_allgather(PyObject *self, PyObject *args) {
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, b.len * bf_dist_size());
    if (!out) {
        PyBuffer_Release(&b);
        return NULL;
    }
    bf_status s;
    char *dst = PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_allgather(b.buf, dst, (long)b.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (s != BF_OK) {
        Py_DECREF(out);
        return bf_raise(bf_state_of_module(self), s);
    }
    return out;
}

static PyObject *dist_abandon(PyObject *self, PyObject *noargs) {
    (void)noargs;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_abandon();
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

static PyObject *dist_agree(PyObject *self, PyObject *args) {
    const char *what;
    if (!PyArg_ParseTuple(args, "s", &what)) return NULL;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_agree(what);
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

static PyObject *dist_finalize(PyObject *self, PyObject *noargs) {
    (void)noargs;
    bf_status s = bf_dist_finalize();
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

/* dist_nccl_setup(device, libnccl_path) -> bytes of device memory NCCL took:
 * the NCCL communicator of a CUDA device (dist_nccl.c) */
static PyObject *dist_nccl_setup(PyObject *self, PyObject *args) {
    const char *device, *lib;
    if (!PyArg_ParseTuple(args, "ss", &device, &lib)) return NULL;
    bf_backend *be;
    size_t bytes = 0;
    bf_status s = bf_backend_get(device, &be);
    if (s == BF_OK) {
        Py_BEGIN_ALLOW_THREADS
        s = bf_nccl_setup(be, lib, &bytes);
        Py_END_ALLOW_THREADS
    }
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    return PyLong_FromSize_t(bytes);
}

static PyObject *dist_nccl_teardown(PyObject *self, PyObject *noargs) {
    (void)noargs;
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_nccl_teardown();
    Py_END_ALLOW_THREADS
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
}

/* dist_set_wire(on): the active distribution's gradient_compression="bfloat16" (runs plan the wire buffer) */
static PyObject *dist_set_wire(PyObject *self, PyObject *args) {
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    bf_dist_set_wire_bf16(on);
    Py_RETURN_NONE;
}

static PyObject *dist_grad_bytes(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyLong_FromLongLong(bf_dist_grad_bytes());
}

/* dist_sum_gradients(grads, wire, bucket): grads (float32, writable) summed over the ranks in place as the
 * training step sums them, in buckets of `bucket` floats (at most 64); wire None (float32 travels) or a
 * writable uint16 buffer of as many values (bfloat16 travels) */
static PyObject *dist_sum_gradients(PyObject *self, PyObject *args) {
    Py_buffer g, w = {0};
    PyObject *wire_obj, *bucket_obj;
    if (!PyArg_ParseTuple(args, "w*OO", &g, &wire_obj, &bucket_obj)) return NULL;
    const long n = (long)(g.len / (Py_ssize_t)sizeof(float));
    long lo[64], hi[64];
    int bucket = 0, nb = 0, has_wire = wire_obj != Py_None;
    if (has_wire && PyObject_GetBuffer(wire_obj, &w, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto fail;
    if (bf_py_int(bucket_obj, "dist_sum_gradients", "bucket", 1, INT_MAX, &bucket) < 0) goto fail;
    if (g.len % (Py_ssize_t)sizeof(float) || (has_wire && w.len != 2 * (Py_ssize_t)n) ||
        (n + bucket - 1) / bucket > 64) {
        PyErr_Format(PyExc_ValueError, "dist_sum_gradients: grads must be float32, wire None or uint16 of as many "
                     "values, at most 64 buckets");
        goto fail;
    }
    for (long at = 0; at < n; at += bucket, nb++) {
        lo[nb] = at;
        hi[nb] = n - at < bucket ? n : at + bucket;
    }
    bf_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bf_dist_sum_buckets((float *)g.buf, has_wire ? (uint16_t *)w.buf : NULL, lo, hi, nb);
    Py_END_ALLOW_THREADS
    if (has_wire) PyBuffer_Release(&w);
    PyBuffer_Release(&g);
    if (s != BF_OK) return bf_raise(bf_state_of_module(self), s);
    Py_RETURN_NONE;
fail:
    if (w.obj) PyBuffer_Release(&w);
    PyBuffer_Release(&g);
    return NULL;
}

static PyObject *dist_overlap_counters(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    long steps, early, buckets;
    double wait_s, thread_s;
    bf_overlap_counters(&steps, &early, &buckets, &wait_s, &thread_s);
    return Py_BuildValue("(llldd)", steps, early, buckets, wait_s, thread_s);
}

static PyMethodDef dist_methods[] = {
    {"dist_set_wire", dist_set_wire, METH_VARARGS,
     "dist_set_wire(on): gradients travel as bfloat16 (float32 sums) in the training runs planned from now"},
    {"dist_grad_bytes", dist_grad_bytes, METH_NOARGS, "gradient bytes this rank handed to the transport"},
    {"dist_sum_gradients", dist_sum_gradients, METH_VARARGS,
     "dist_sum_gradients(grads, wire, bucket): the training step's gradient sum (wire None: float32; uint16: "
     "bfloat16)"},
    {"dist_overlap_counters", dist_overlap_counters, METH_NOARGS,
     "(overlapped steps, gradient buckets handed over during backward, buckets in all, "
     "seconds waited for the communication thread, seconds it worked)"},
    {"dist_nccl_setup", dist_nccl_setup, METH_VARARGS,
     "dist_nccl_setup(device, libnccl_path) -> device bytes NCCL took (ncclCommInitRank)"},
    {"dist_nccl_teardown", dist_nccl_teardown, METH_NOARGS, "ncclCommDestroy of the group's communicator"},
    {"dist_init", dist_init, METH_VARARGS, "dist_init(libmpi_abi_path, timeout_s) -> (rank, size)"},
    {"dist_init_tcp", dist_init_tcp, METH_VARARGS,
     "dist_init_tcp(master_addr, master_port, rank, world_size, timeout_s) -> (rank, size)"},
    {"dist_info", dist_info, METH_NOARGS, "(rank, size, seconds spent in collectives)"},
    {"dist_set_timeout", dist_set_timeout, METH_VARARGS, "dist_set_timeout(seconds): the bound on every wait"},
    {"dist_allreduce_f64", dist_allreduce_f64, METH_VARARGS, "dist_allreduce_f64(buf, op): in place, op 0 sum 1 max 2 min"},
    {"dist_bcast", dist_bcast, METH_VARARGS, "dist_bcast(buf, root): in place"},
    {"dist_allgather", dist_allgather, METH_VARARGS, "dist_allgather(bytes) -> bytes of every rank"},
    {"dist_abandon", dist_abandon, METH_NOARGS, "this rank stopped with an error: tell the others (bounded wait)"},
    {"dist_agree", dist_agree, METH_VARARGS, "dist_agree(what): fails when another rank stopped with an error"},
    {"dist_finalize", dist_finalize, METH_NOARGS, "MPI_Finalize when the group is healthy"},
    {NULL, NULL, 0, NULL},
};

int bf_dist_py_init(PyObject *m) { return PyModule_AddFunctions(m, dist_methods); }
