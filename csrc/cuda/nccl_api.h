/* nccl_api.h - the few declarations of NCCL's C API that nccl.cu uses, under
 * our own names (bf_nccl_*), so the backend builds without nccl.h and calls
 * libnccl.so.2 only through dlsym'ed pointers (the `nvidia-nccl-cu13` wheel,
 * found at run time like the other NVIDIA wheels). The values are NCCL 2.x's
 * (stable since 2.0); tests/c_cuda/nccl_abi_check.cpp compiles these against
 * the real nccl.h and checks every value and size. */
#ifndef BF_NCCL_API_H
#define BF_NCCL_API_H

#include <limits.h>
#include <stddef.h>

#define BF_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

typedef struct bf_nccl_comm *bf_nccl_comm_t; /* ncclComm_t */
typedef struct {
    char internal[BF_NCCL_ID_BYTES];
} bf_nccl_id; /* ncclUniqueId */
typedef int bf_nccl_result; /* ncclResult_t (an enum: int-sized) */

enum {
    BF_NCCL_SUCCESS = 0,       /* ncclSuccess */
    BF_NCCL_SYSTEM_ERROR = 2,  /* ncclSystemError */
    BF_NCCL_REMOTE_ERROR = 6,  /* ncclRemoteError */
    BF_NCCL_IN_PROGRESS = 7,   /* ncclInProgress */
    BF_NCCL_INT8 = 0,          /* ncclInt8 (ncclDataType_t): bytes */
    BF_NCCL_FLOAT32 = 7,       /* ncclFloat32 (ncclDataType_t) */
    BF_NCCL_SUM = 0            /* ncclSum (ncclRedOp_t) */
};

/* ncclConfig_t's leading fields as NCCL 2.17 defined them (size and version
 * tell a newer NCCL which fields follow); only `blocking` is set, the rest
 * left undefined (NCCL_CONFIG_UNDEF_INT / NULL) as NCCL_CONFIG_INITIALIZER does */
typedef struct {
    size_t size;
    unsigned int magic;   /* 0xcafebeef */
    unsigned int version; /* NCCL_VERSION(2, 17, 0) */
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
} bf_nccl_config;
#define BF_NCCL_CONFIG_MAGIC 0xcafebeefu
#define BF_NCCL_CONFIG_VERSION 21700
#define BF_NCCL_UNDEF_INT INT_MIN

/* the functions, as pointers: cudaStream_t is passed as void * (same size) */
typedef struct {
    bf_nccl_result (*GetVersion)(int *version);
    bf_nccl_result (*GetUniqueId)(bf_nccl_id *id);
    bf_nccl_result (*CommInitRank)(bf_nccl_comm_t *comm, int nranks, bf_nccl_id id, int rank);
    /* NCCL >= 2.14; NULL when missing (then the blocking ncclCommInitRank) */
    bf_nccl_result (*CommInitRankConfig)(bf_nccl_comm_t *comm, int nranks, bf_nccl_id id, int rank,
                                         bf_nccl_config *config);
    bf_nccl_result (*CommGetAsyncError)(bf_nccl_comm_t comm, bf_nccl_result *err);
    bf_nccl_result (*CommAbort)(bf_nccl_comm_t comm);
    bf_nccl_result (*CommDestroy)(bf_nccl_comm_t comm);
    bf_nccl_result (*AllReduce)(const void *send, void *recv, size_t count, int dtype, int op, bf_nccl_comm_t comm,
                                void *stream);
    bf_nccl_result (*Broadcast)(const void *send, void *recv, size_t count, int dtype, int root,
                                bf_nccl_comm_t comm, void *stream);
    bf_nccl_result (*GroupStart)(void);
    bf_nccl_result (*GroupEnd)(void);
    const char *(*GetErrorString)(bf_nccl_result r);
} bf_nccl_fns;

#endif
