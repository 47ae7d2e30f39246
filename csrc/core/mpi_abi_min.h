/* mpi_abi_min.h - the few MPI names dist_mpi.c uses, from the MPI-5 standard
 * ABI (mpi_abi.h): handles are opaque pointers whose predefined values are
 * fixed by the standard, so no MPI header or library is needed to build; the
 * library (libmpi_abi.so) is dlopen'ed at run time. */
#ifndef BF_MPI_ABI_MIN_H
#define BF_MPI_ABI_MIN_H

typedef struct MPI_ABI_Op *MPI_Op;
typedef struct MPI_ABI_Comm *MPI_Comm;
typedef struct MPI_ABI_Errhandler *MPI_Errhandler;
typedef struct MPI_ABI_Request *MPI_Request;
typedef struct MPI_ABI_Datatype *MPI_Datatype;
typedef struct MPI_Status MPI_Status;

#define MPI_SUM ((MPI_Op)0x00000021)
#define MPI_MIN ((MPI_Op)0x00000022)
#define MPI_MAX ((MPI_Op)0x00000023)
#define MPI_COMM_WORLD ((MPI_Comm)0x00000101)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)0x00000143)
#define MPI_REQUEST_NULL ((MPI_Request)0x00000180)
#define MPI_INT ((MPI_Datatype)0x00000209)
#define MPI_FLOAT ((MPI_Datatype)0x00000210)
#define MPI_DOUBLE ((MPI_Datatype)0x00000214)
#define MPI_BYTE ((MPI_Datatype)0x00000247)
#define MPI_UINT16_T ((MPI_Datatype)0x00000249)
#define MPI_IN_PLACE ((void *)1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_THREAD_SERIALIZED 2048
#define MPI_SUCCESS 0
#define MPI_MAX_ERROR_STRING 512

typedef void(MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);

#endif
