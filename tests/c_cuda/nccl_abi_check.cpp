// nccl_abi_check.cpp - csrc/cuda/nccl_api.h (our own NCCL declarations, the
// backend builds without nccl.h) checked against the real nccl.h: every value
// and size nccl.cu relies on, and each function's type with our handle types
// substituted. Compile-only (g++ -fsyntax-only -I<dir of nccl.h>).
#include <nccl.h>

#include <type_traits>

#include "../../csrc/cuda/nccl_api.h"

static_assert(sizeof(ncclUniqueId) == sizeof(bf_nccl_id), "ncclUniqueId size");
static_assert(NCCL_UNIQUE_ID_BYTES == BF_NCCL_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");
static_assert(sizeof(ncclResult_t) == sizeof(bf_nccl_result), "ncclResult_t size");
static_assert(sizeof(ncclDataType_t) == sizeof(int) && sizeof(ncclRedOp_t) == sizeof(int), "enum sizes");
static_assert(sizeof(ncclComm_t) == sizeof(bf_nccl_comm_t), "ncclComm_t size");
static_assert((int)ncclSuccess == BF_NCCL_SUCCESS && (int)ncclSystemError == BF_NCCL_SYSTEM_ERROR &&
              (int)ncclRemoteError == BF_NCCL_REMOTE_ERROR && (int)ncclInProgress == BF_NCCL_IN_PROGRESS, "ncclResult_t values");
static_assert((int)ncclFloat32 == BF_NCCL_FLOAT32 && (int)ncclSum == BF_NCCL_SUM, "ncclFloat32 / ncclSum");
// the real prototypes, each assignable to a pointer of our shape once the handles are swapped
static_assert(std::is_same<decltype(&ncclAllReduce), ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t,
                                                                      ncclRedOp_t, ncclComm_t, cudaStream_t)>::value,
              "ncclAllReduce");
static_assert(std::is_same<decltype(&ncclCommInitRank), ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int)>::value,
              "ncclCommInitRank");
static_assert(std::is_same<decltype(&ncclCommGetAsyncError), ncclResult_t (*)(ncclComm_t, ncclResult_t *)>::value,
              "ncclCommGetAsyncError");
static_assert(std::is_same<decltype(&ncclCommAbort), ncclResult_t (*)(ncclComm_t)>::value, "ncclCommAbort");
static_assert(std::is_same<decltype(&ncclCommDestroy), ncclResult_t (*)(ncclComm_t)>::value, "ncclCommDestroy");
static_assert(std::is_same<decltype(&ncclGetUniqueId), ncclResult_t (*)(ncclUniqueId *)>::value, "ncclGetUniqueId");
static_assert(std::is_same<decltype(&ncclGroupStart), ncclResult_t (*)()>::value, "ncclGroupStart");
static_assert(std::is_same<decltype(&ncclGetErrorString), const char *(*)(ncclResult_t)>::value, "ncclGetErrorString");
static_assert(sizeof(cudaStream_t) == sizeof(void *), "stream passed as void *");
// the non-blocking init's config: our leading fields where ncclConfig_t has them
#include <cstddef>
static_assert(offsetof(ncclConfig_t, size) == offsetof(bf_nccl_config, size) &&
              offsetof(ncclConfig_t, magic) == offsetof(bf_nccl_config, magic) &&
              offsetof(ncclConfig_t, version) == offsetof(bf_nccl_config, version) &&
              offsetof(ncclConfig_t, blocking) == offsetof(bf_nccl_config, blocking) &&
              offsetof(ncclConfig_t, cgaClusterSize) == offsetof(bf_nccl_config, cgaClusterSize) &&
              offsetof(ncclConfig_t, minCTAs) == offsetof(bf_nccl_config, minCTAs) &&
              offsetof(ncclConfig_t, maxCTAs) == offsetof(bf_nccl_config, maxCTAs) &&
              offsetof(ncclConfig_t, netName) == offsetof(bf_nccl_config, netName) &&
              offsetof(ncclConfig_t, splitShare) == offsetof(bf_nccl_config, splitShare),
              "ncclConfig_t's leading fields");
static_assert(sizeof(bf_nccl_config) <= sizeof(ncclConfig_t), "ncclConfig_t size");
static_assert(NCCL_CONFIG_UNDEF_INT == BF_NCCL_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");
static_assert(NCCL_VERSION(2, 17, 0) == BF_NCCL_CONFIG_VERSION, "NCCL_VERSION");
static_assert(std::is_same<decltype(&ncclCommInitRankConfig),
                           ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *)>::value,
              "ncclCommInitRankConfig");
static_assert((int)ncclInt8 == BF_NCCL_INT8, "ncclInt8");
static_assert(std::is_same<decltype(&ncclBroadcast), ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, int,
                                                                      ncclComm_t, cudaStream_t)>::value,
              "ncclBroadcast");
