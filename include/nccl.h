/*
 * Copyright Weft authors.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Weft's public C API: NCCL 2.28's interface, declaration for declaration. A program written for
 * NVIDIA's nccl.h compiles against this file, and a program built against NVIDIA's header links and
 * runs against Weft's libnccl.so.2 (same names, types, enum values and struct layouts).
 *
 * Every function ncclXxx has a twin pncclXxx with the same signature (NCCL's profiling interface:
 * a tool may define ncclXxx itself and forward to pncclXxx).
 *
 * The header compiles as C99 and as C++11 or later, with or without the CUDA toolkit. Where
 * <cuda_runtime.h> can be found it is included, as NVIDIA's header does; otherwise cudaStream_t is
 * declared exactly as CUDA declares it, so that including <cuda_runtime.h> later still compiles.
 *
 * Unless a function says otherwise: it returns ncclSuccess or an error code and never throws; it is
 * safe to call from any thread for different communicators; calls on one communicator from several
 * threads at once must be serialized by the caller.
 */

#ifndef NCCL_H_
#define NCCL_H_

/* Set only by Weft's header, so that a build can tell which nccl.h it compiled against. */
#define WEFT_NCCL_H_ 1

#if defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#define WEFT_NCCL_HAVE_CUDA_RUNTIME 1
#endif
#endif

#if defined(WEFT_NCCL_HAVE_CUDA_RUNTIME)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#else
/* The CUDA runtime's own declaration, token for token (a repeated identical typedef is valid C11
 * and C++). Host-memory programs pass NULL or 0. */
typedef struct CUstream_st* cudaStream_t;
#endif

#include <limits.h>
#include <stddef.h>

/* ---- Version ---------------------------------------------------------------------------------- */

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
/* Versions up to 2.8 were coded X*1000+Y*100+Z; later ones X*10000+Y*100+Z. */
#define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles and identifiers ------------------------------------------------------------------ */

/* A communicator: one rank's membership in a group of ranks. Opaque. */
typedef struct ncclComm* ncclComm_t;
/* A registered memory window (ncclCommWindowRegister). Opaque. */
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

/* Names one communicator being created: made once by ncclGetUniqueId, copied to every rank by the
 * application (bytes only; no pointers inside), passed to ncclCommInitRank*. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

/* ---- Results ---------------------------------------------------------------------------------- */

typedef enum { ncclSuccess                 =  0,
               ncclUnhandledCudaError      =  1,  /* a CUDA call failed */
               ncclSystemError             =  2,  /* a system call or the network failed */
               ncclInternalError           =  3,  /* a bug, or memory corruption */
               ncclInvalidArgument         =  4,  /* a bad argument; nothing was done */
               ncclInvalidUsage            =  5,  /* a call not allowed now (wrong order, ...) */
               ncclRemoteError             =  6,  /* a peer failed or went away */
               ncclInProgress              =  7,  /* nonblocking communicator: not finished yet */
               ncclNumResults              =  8 } ncclResult_t;

/* ---- Configuration ---------------------------------------------------------------------------- */

/* A config field left at one of these values takes the library's default (or the environment's). */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* ncclCommSplit color for a rank that joins no new communicator (it gets NULL back). */
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommWindowRegister flags; windows must be aligned to NCCL_WIN_REQUIRED_ALIGNMENT bytes. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags: shrink a healthy parent, or first abort what is running on it. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags: none defined yet; pass 0. */
#define NCCL_REVOKE_DEFAULT 0x00

/* Options for a new communicator. Always start from NCCL_CONFIG_INITIALIZER: size, magic and
 * version tell the library which revision of the struct the caller was built with. */
typedef struct ncclConfig_v22800 {
  size_t size;                 /* set by the initializer; do not change */
  unsigned int magic;          /* set by the initializer; do not change */
  unsigned int version;        /* set by the initializer; do not change */
  int blocking;                /* 0: calls may return ncclInProgress (see ncclCommGetAsyncError) */
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;         /* network plugin/transport to use, e.g. "IB" or "Socket" */
  int splitShare;              /* ncclCommSplit children share the parent's resources */
  int trafficClass;
  const char *commName;        /* shown in logs */
  int collnetEnable;
  int CTAPolicy;               /* NCCL_CTA_POLICY_* */
  int shrinkShare;             /* ncclCommShrink children share the parent's resources */
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER {                                                    \
  sizeof(ncclConfig_t),                               /* size */                     \
  0xcafebeef,                                         /* magic */                    \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),   /* version */                  \
  NCCL_CONFIG_UNDEF_INT,                              /* blocking */                 \
  NCCL_CONFIG_UNDEF_INT,                              /* cgaClusterSize */           \
  NCCL_CONFIG_UNDEF_INT,                              /* minCTAs */                  \
  NCCL_CONFIG_UNDEF_INT,                              /* maxCTAs */                  \
  NCCL_CONFIG_UNDEF_PTR,                              /* netName */                  \
  NCCL_CONFIG_UNDEF_INT,                              /* splitShare */               \
  NCCL_CONFIG_UNDEF_INT,                              /* trafficClass */             \
  NCCL_CONFIG_UNDEF_PTR,                              /* commName */                 \
  NCCL_CONFIG_UNDEF_INT,                              /* collnetEnable */            \
  NCCL_CONFIG_UNDEF_INT,                              /* CTAPolicy */                \
  NCCL_CONFIG_UNDEF_INT,                              /* shrinkShare */              \
  NCCL_CONFIG_UNDEF_INT,                              /* nvlsCTAs */                 \
  NCCL_CONFIG_UNDEF_INT,                              /* nChannelsPerNetPeer */      \
  NCCL_CONFIG_UNDEF_INT,                              /* nvlinkCentricSched */       \
}

/* What ncclGroupSimulateEnd reports. Start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;                 /* set by the initializer; do not change */
  unsigned int magic;          /* set by the initializer; do not change */
  unsigned int version;        /* set by the initializer; do not change */
  float estimatedTime;         /* predicted time of the simulated group */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER {                                                  \
  sizeof(ncclSimInfo_t),                              /* size */                     \
  0x74685283,                                         /* magic */                    \
  NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),   /* version */                  \
  NCCL_UNDEF_FLOAT                                    /* estimatedTime */            \
}

/* ---- Reduction operators and data types ------------------------------------------------------- */

/* Only sizes ncclRedOp_t: ncclMaxRedOp is the largest value that keeps the enum this size. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

typedef enum { ncclSum        = 0,
               ncclProd       = 1,
               ncclMax        = 2,
               ncclMin        = 3,
               ncclAvg        = 4,
               /* Count of the built-in operators; operators made by ncclRedOpCreatePreMulSum
                * take values from here up. */
               ncclNumOps     = 5,
               ncclMaxRedOp   = 0x7fffffff>>(32-8*sizeof(ncclRedOp_dummy_t))
             } ncclRedOp_t;

typedef enum { ncclInt8       = 0, ncclChar       = 0,
               ncclUint8      = 1,
               ncclInt32      = 2, ncclInt        = 2,
               ncclUint32     = 3,
               ncclInt64      = 4,
               ncclUint64     = 5,
               ncclFloat16    = 6, ncclHalf       = 6,
               ncclFloat32    = 7, ncclFloat      = 7,
               ncclFloat64    = 8, ncclDouble     = 8,
               ncclBfloat16   = 9,
               ncclFloat8e4m3 = 10,
               ncclFloat8e5m2 = 11,
               ncclNumTypes   = 12
} ncclDataType_t;

/* Where the scalar given to ncclRedOpCreatePreMulSum lives and when it is read. */
typedef enum {
  ncclScalarDevice = 0,        /* device-visible memory, read while each collective runs */
  ncclScalarHostImmediate = 1  /* host memory, read before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/* ---- Memory ----------------------------------------------------------------------------------- */

/* Allocates at least size bytes suited to registration (ncclCommRegister, windows); free with
 * ncclMemFree. */
ncclResult_t  ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);

/* Frees memory from ncclMemAlloc. */
ncclResult_t  ncclMemFree(void *ptr);
ncclResult_t pncclMemFree(void *ptr);

/* ---- Library information ---------------------------------------------------------------------- */

/* Stores the library's NCCL_VERSION_CODE in *version. */
ncclResult_t  ncclGetVersion(int *version);
ncclResult_t pncclGetVersion(int *version);

/* Static text naming a result code; never NULL. */
const char*  ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* A readable message about the last error (comm may be NULL); an empty string when there is none.
 * The text stays valid until the next failing call. */
const char*  ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging settings from the environment. Deprecated by NCCL, kept for old programs. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("ncclResetDebugInit is not part of the supported NCCL API and will be removed")))
#endif
void  ncclResetDebugInit(void);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("pncclResetDebugInit is not part of the supported NCCL API and will be removed")))
#endif
void pncclResetDebugInit(void);

/* ---- Creating and destroying communicators ---------------------------------------------------- */

/* Makes a new id for one communicator. Call it on one rank and send the bytes to all the others
 * (with NCCL_COMM_ID set, every rank may call it and gets the same id). */
ncclResult_t  ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Joins the communicator named by commId as rank (0 <= rank < nranks). Blocks until all nranks
 * ranks have joined, so the ranks must call it from different threads or processes, or inside one
 * ncclGroupStart/ncclGroupEnd. */
ncclResult_t  ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* ncclCommInitRank with options (config may be NULL for the defaults). With config->blocking == 0
 * it may return ncclInProgress: poll ncclCommGetAsyncError until it is no longer in progress. */
ncclResult_t  ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);

/* ncclCommInitRankConfig with nId ids (1 <= nId <= nranks) to spread the bootstrap over several
 * roots; every rank passes the same ids in the same order. */
ncclResult_t  ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config);

/* Creates all ndev ranks of one communicator from a single thread; comm must hold ndev handles.
 * devlist picks the CUDA device of each rank (NULL: devices 0..ndev-1). */
ncclResult_t  ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Completes every operation issued on comm and releases what peers share; afterwards only
 * ncclCommDestroy (or ncclCommAbort) may be called. A nonblocking comm may return ncclInProgress. */
ncclResult_t  ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees this rank's resources of comm; the handle is invalid afterwards. */
ncclResult_t  ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops whatever comm is doing and frees it without waiting for peers. May be called from another
 * thread than the one blocked in a call on comm. */
ncclResult_t  ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Cancels the operations in flight on comm and stops new ones; once quiescent (poll
 * ncclCommGetAsyncError), comm may be destroyed, split or shrunk but not finalized. revokeFlags
 * must be NCCL_REVOKE_DEFAULT. */
ncclResult_t  ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collective over comm: ranks passing the same color form a new communicator, ordered by key (ties
 * by their rank in comm). color NCCL_SPLIT_NOCOLOR gives *newcomm = NULL. config NULL inherits
 * comm's configuration. */
ncclResult_t  ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);

/* Collective over the ranks of comm that remain: makes a communicator without the
 * excludeRanksCount ranks listed, keeping the others' order. shrinkFlags: NCCL_SHRINK_*. config
 * NULL inherits comm's configuration. */
ncclResult_t  ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* ---- Querying communicators ------------------------------------------------------------------- */

/* ncclSuccess when comm is healthy and idle, ncclInProgress while a nonblocking call is still
 * running, otherwise the error that stopped it (the communicator must then be aborted). */
ncclResult_t  ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);

/* Number of ranks in comm. */
ncclResult_t  ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);

/* CUDA device that this rank uses. */
ncclResult_t  ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);

/* This rank's index in comm. */
ncclResult_t  ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* ---- Buffer registration ---------------------------------------------------------------------- */

/* Registers [buff, buff+size) with comm so collectives on it may avoid copies; *handle is released
 * with ncclCommDeregister before the memory is freed. */
ncclResult_t  ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);

ncclResult_t  ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Collective over comm: registers a window of the same size on every rank. winFlags:
 * NCCL_WIN_*. Release with ncclCommWindowDeregister, also collectively. */
ncclResult_t  ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);

ncclResult_t  ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* ---- Custom reduction operators --------------------------------------------------------------- */

/* Makes an operator that multiplies each input by *scalar (of type datatype) on this rank, then
 * sums across ranks. Valid only on comm and for datatype; free it with ncclRedOpDestroy. */
ncclResult_t  ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);

/* Frees an operator from ncclRedOpCreatePreMulSum on the same comm; allowed as soon as the last
 * call that used it has returned. */
ncclResult_t  ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/*
 * ---- Collectives and point-to-point ------------------------------------------------------------
 *
 * Every rank of comm makes the matching call. A call returns once the operation is enqueued on
 * stream (device buffers) or, for host buffers, once it is complete. Since a call may wait for the
 * other ranks, ranks driven by one thread must be wrapped in ncclGroupStart/ncclGroupEnd. Counts
 * are in elements of datatype. "In place" means the output overwrites the input as described.
 */

/* Reduces sendbuff of all ranks with op into recvbuff of root (recvbuff unused elsewhere).
 * In place when sendbuff == recvbuff. */
ncclResult_t  ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

/* Copies count elements of buff on root into buff on every other rank (deprecated: use
 * ncclBroadcast). */
ncclResult_t  ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);

/* Copies sendbuff of root into recvbuff of every rank. In place when sendbuff == recvbuff. */
ncclResult_t  ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
    ncclComm_t comm, cudaStream_t stream);

/* Reduces sendbuff of all ranks with op and leaves the result in recvbuff of every rank. In place
 * when sendbuff == recvbuff. */
ncclResult_t  ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

/* Reduces sendbuff (nranks*recvcount elements) of all ranks with op; rank i receives block i of the
 * result in recvbuff. In place when recvbuff == sendbuff + rank*recvcount. */
ncclResult_t  ncclReduceScatter(const void* sendbuff, void* recvbuff,
    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff,
    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
    cudaStream_t stream);

/* Every rank receives sendcount elements from each rank i at recvbuff + i*sendcount (recvbuff holds
 * nranks*sendcount). In place when sendbuff == recvbuff + rank*sendcount. */
ncclResult_t  ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Rank i sends sendbuff + j*count to rank j, which stores it at recvbuff + i*count. */
ncclResult_t  ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* root receives count elements from each rank i at recvbuff + i*count (recvbuff unused
 * elsewhere). In place when sendbuff == recvbuff + root*count. */
ncclResult_t  ncclGather(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* root sends sendbuff + i*count to rank i, which stores count elements in recvbuff (sendbuff unused
 * elsewhere). In place when recvbuff == sendbuff + root*count. */
ncclResult_t  ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Sends count elements to rank peer, which must post a matching ncclRecv. Several sends and
 * receives that must progress together go in one group. */
ncclResult_t  ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);

/* Receives count elements from rank peer, which must post a matching ncclSend. */
ncclResult_t  ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);

/* ---- Groups ----------------------------------------------------------------------------------- */

/* Opens a group (groups nest): calls until the matching ncclGroupEnd are only recorded. Lets one
 * thread drive several ranks, fuses operations, and lets sends and receives progress together. */
ncclResult_t  ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);

/* Closes the group and launches everything recorded since ncclGroupStart (host buffers: returns
 * when it is all complete). */
ncclResult_t  ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);

/* Like ncclGroupEnd, but runs nothing: fills *simInfo (from NCCL_SIM_INFO_INITIALIZER) with the
 * predicted time of the group and discards it. */
ncclResult_t  ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* NCCL_H_ */
