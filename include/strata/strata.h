/// strata: a topology-aware collective communication library (all-reduce,
/// reduce-scatter, all-gather, broadcast, reduce, all-to-all, send/recv).
///
/// The API is shaped like NCCL's so that NCCL users know it at a glance:
/// opaque communicator handles, one result enum, a per-communicator last
/// error sentence, and a config struct set from an initializer macro.
///
/// Host buffers: a call returns when the result is in place (after any device
/// operation enqueued earlier on the communicator has run).
/// Device buffers (CUDA): as NCCL's, the call enqueues the operation on the
/// given stream (a cudaStream_t; NULL = the legacy default stream) and returns;
/// work enqueued on that stream afterwards sees the result. Send and receive
/// buffers are both on the device (or both on the host), on the one device the
/// communicator is used with. A failure found after the call returned marks the
/// communicator failed: strataCommGetAsyncError reports it, later calls return
/// it, and the stream's results are undefined. Calls inside CUDA graph capture
/// return strataUnsupported. Ranks of one host read each other's device memory
/// through CUDA IPC for collectives on device buffers (all of them on one
/// host, all-reduce across hosts; the first one sets that up;
/// STRATA_CUDA_IPC=0 stages through host memory instead), so a collective's
/// buffers must be device memory on every rank or on none (strataMismatch
/// otherwise).
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_MAJOR 0
#define STRATA_MINOR 1
#define STRATA_PATCH 0
/// Version as one integer: major * 10000 + minor * 100 + patch.
#define STRATA_VERSION_CODE (STRATA_MAJOR * 10000 + STRATA_MINOR * 100 + STRATA_PATCH)

/// Result of every call. strataSuccess is 0.
typedef enum {
  strataSuccess = 0,
  strataInProgress = 1,        ///< non-blocking operation still running
  strataInvalidArgument = 2,   ///< a bad pointer, count, dtype, op, root or peer
  strataInvalidUsage = 3,      ///< the call is not allowed in this state
  strataSystemError = 4,       ///< the OS refused (socket, shm, memory)
  strataRemoteError = 5,       ///< a peer died, closed its connection or aborted
  strataTimeout = 6,           ///< a peer did not respond within the timeout
  strataMismatch = 7,          ///< ranks called different collectives / counts / types
  strataUnsupported = 8,       ///< valid but not supported by this build
  strataInternalError = 9,     ///< a bug in strata
  strataNumResults = 10
} strataResult_t;

typedef enum {
  strataInt8 = 0,
  strataUint8 = 1,
  strataInt32 = 2,
  strataUint32 = 3,
  strataInt64 = 4,
  strataUint64 = 5,
  strataFloat16 = 6,
  strataBfloat16 = 7,
  strataFloat32 = 8,
  strataFloat64 = 9,
  strataNumTypes = 10
} strataDataType_t;

/// Reduction operators. strataAvg on integers truncates toward zero, as NCCL's.
typedef enum {
  strataSum = 0,
  strataProd = 1,
  strataMax = 2,
  strataMin = 3,
  strataAvg = 4,
  strataNumOps = 5
} strataRedOp_t;

/// Opaque communicator handle.
typedef struct strataComm* strataComm_t;
/// A cudaStream_t for device buffers; ignored for host buffers.
typedef void* strataStream_t;

#define STRATA_UNIQUE_ID_BYTES 128
/// Names the rendezvous root and carries the communicator's 128-bit secret.
/// Made by strataGetUniqueId on one rank and passed to all others out of band.
typedef struct {
  char internal[STRATA_UNIQUE_ID_BYTES];
} strataUniqueId;

#define STRATA_CONFIG_MAGIC 0x53545243u /* "STRC" */
#define STRATA_CONFIG_VERSION 1u
/// Communicator options. Always start from STRATA_CONFIG_INITIALIZER.
typedef struct {
  size_t size;          ///< sizeof(strataConfig_t), set by the initializer
  unsigned int magic;   ///< STRATA_CONFIG_MAGIC
  unsigned int version; ///< STRATA_CONFIG_VERSION
  int blocking;         ///< 1: calls block until done (the only mode for host buffers today)
  int timeoutMs;        ///< peer timeout; -1 = STRATA_TIMEOUT_MS or 600000 (10 minutes)
} strataConfig_t;

#define STRATA_CONFIG_INITIALIZER \
  { sizeof(strataConfig_t), STRATA_CONFIG_MAGIC, STRATA_CONFIG_VERSION, 1, -1 }

/// Library version as STRATA_VERSION_CODE.
strataResult_t strataGetVersion(int* version);
/// A short fixed description of a result code.
const char* strataGetErrorString(strataResult_t result);
/// The sentence describing the last failure on comm: what failed, in which
/// call, involving which rank. With comm == NULL: the calling thread's last
/// error (for calls that had no communicator yet). Never NULL.
const char* strataGetLastError(strataComm_t comm);

/// Creates a unique id and starts the rendezvous root in this process.
/// The root listens on STRATA_COMM_ID (host:port) when set, else on an
/// ephemeral port of this host's address.
strataResult_t strataGetUniqueId(strataUniqueId* uniqueId);
strataResult_t strataCommInitRank(strataComm_t* comm, int nranks, strataUniqueId id, int rank);
strataResult_t strataCommInitRankConfig(strataComm_t* comm, int nranks, strataUniqueId id,
                                        int rank, strataConfig_t* config);
/// Rank and size from torchrun (RANK, WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK,
/// OMPI_COMM_WORLD_SIZE) or Slurm (SLURM_PROCID, SLURM_NTASKS); the root from
/// STRATA_COMM_ID=host:port or MASTER_ADDR/MASTER_PORT. Rank 0 hosts the root.
strataResult_t strataCommInitFromEnv(strataComm_t* comm);
/// Frees the communicator after its operations completed.
strataResult_t strataCommDestroy(strataComm_t comm);
/// Tells connected peers this rank is leaving, closes everything and frees comm.
strataResult_t strataCommAbort(strataComm_t comm);
/// Builds *newcomm from the ranks of comm not listed in excludeRanks (they
/// keep their order: new rank = old rank minus the excluded ranks below it),
/// with no new unique id: the lowest surviving rank hosts the rendezvous on a
/// port every rank learnt at init. Every surviving rank calls it with the same
/// list (a rank whose list differs is not admitted: the call times out). comm
/// may have failed (a peer died); it stays valid and must still be aborted or
/// destroyed. The typical recovery: catch the error, strataCommShrink, then
/// strataCommAbort(comm), and carry on with *newcomm.
strataResult_t strataCommShrink(strataComm_t comm, const int* excludeRanks, int excludeCount,
                                strataComm_t* newcomm);
/// *asyncError: strataSuccess, or the code that failed the communicator, also
/// after the call that enqueued the failing device operation had returned
/// (NCCL's ncclCommGetAsyncError); strataGetLastError(comm) then names it.
strataResult_t strataCommGetAsyncError(strataComm_t comm, strataResult_t* asyncError);
strataResult_t strataCommCount(const strataComm_t comm, int* count);
strataResult_t strataCommUserRank(const strataComm_t comm, int* rank);

strataResult_t strataAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               strataDataType_t datatype, strataRedOp_t op, strataComm_t comm,
                               strataStream_t stream);
/// recvbuff gets block `rank` (recvcount elements) of the reduction of sendbuff
/// (nranks * recvcount elements).
strataResult_t strataReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   strataDataType_t datatype, strataRedOp_t op,
                                   strataComm_t comm, strataStream_t stream);
/// recvbuff (nranks * sendcount elements) gets every rank's sendbuff in rank order.
strataResult_t strataAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               strataDataType_t datatype, strataComm_t comm,
                               strataStream_t stream);
strataResult_t strataBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               strataDataType_t datatype, int root, strataComm_t comm,
                               strataStream_t stream);
/// recvbuff is only written (and only needed) on root.
strataResult_t strataReduce(const void* sendbuff, void* recvbuff, size_t count,
                            strataDataType_t datatype, strataRedOp_t op, int root,
                            strataComm_t comm, strataStream_t stream);
/// count elements to and from each peer: block p of sendbuff goes to rank p,
/// block p of recvbuff comes from rank p.
strataResult_t strataAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              strataDataType_t datatype, strataComm_t comm,
                              strataStream_t stream);
strataResult_t strataSend(const void* sendbuff, size_t count, strataDataType_t datatype, int peer,
                          strataComm_t comm, strataStream_t stream);
strataResult_t strataRecv(void* recvbuff, size_t count, strataDataType_t datatype, int peer,
                          strataComm_t comm, strataStream_t stream);
/// Receives count elements from whichever rank's strataSend to this rank
/// arrives first (MPI_ANY_SOURCE); *peer is set to that rank. The send must
/// have the same count and datatype (else strataMismatch). Not inside a
/// group; count 0 is refused, since zero-element sends are not transmitted.
/// Ranks that have left are skipped; if no send comes within the timeout,
/// strataTimeout.
strataResult_t strataRecvAny(void* recvbuff, size_t count, strataDataType_t datatype, int* peer,
                             strataComm_t comm, strataStream_t stream);
strataResult_t strataBarrier(strataComm_t comm, strataStream_t stream);

/// What strataCommGetStats counts per collective (send/recv: every group of
/// point-to-point operations run together counts once).
typedef enum {
  strataStatAllReduce = 0,
  strataStatReduceScatter = 1,
  strataStatAllGather = 2,
  strataStatBroadcast = 3,
  strataStatReduce = 4,
  strataStatAllToAll = 5,
  strataStatSendRecv = 6,
  strataStatBarrier = 7,
  strataNumStatColls = 8
} strataStatColl_t;

/// Transports, as strataCommGetStats counts them.
typedef enum {
  strataTransportShm = 0,
  strataTransportOfi = 1,
  strataTransportUcx = 2,
  strataTransportTcp = 3,
  strataNumTransports = 4
} strataTransport_t;

typedef struct {
  uint64_t calls;       ///< operations completed
  uint64_t failed;      ///< operations that returned an error
  uint64_t bytes;       ///< data size as nccl-tests defines it (all-reduce: count x size; all-gather: the whole output)
  double seconds;       ///< wall time from the start of the operation to its end
  double waitSeconds;   ///< of which no data could move (waiting for peers), beyond a brief spin
  double busBytes;      ///< bytes x the bus factor (all-reduce 2(n-1)/n, ...): busbw = busBytes / seconds
} strataCollStats_t;

typedef struct {
  uint64_t links;          ///< links to peers open over this transport
  uint64_t bytesSent;      ///< payload bytes this rank sent over it
  uint64_t bytesReceived;  ///< payload bytes this rank received over it
  double seconds;          ///< wall time of the operations that moved data over it
} strataTransportStats_t;

/// Totals since the communicator was created.
typedef struct {
  strataCollStats_t coll[strataNumStatColls];
  strataTransportStats_t transport[strataNumTransports];
} strataStats_t;

/// Fills *stats (STRATA_STATS=1 also prints them when the communicator is destroyed).
strataResult_t strataCommGetStats(const strataComm_t comm, strataStats_t* stats);

/// What this rank has seen of one peer, to find where a rank that never came
/// was (torch's monitored_barrier reports it): the last operation whose
/// descriptor this rank received from the peer (a descriptor travels with the
/// data, so a peer this rank has not received from in the plans run so far,
/// such as its successor in a ring, reads 0), and how far this rank itself is.
/// Operations are numbered per communicator as strata issues them (each
/// collective, each group of sends and receives). Safe to call while another
/// thread runs an operation on the communicator; an error is the calling
/// thread's (strataGetLastError(NULL)), not the communicator's.
typedef struct {
  uint64_t lastSeq;           ///< the peer's last operation this rank received (0: none yet)
  strataStatColl_t lastColl;  ///< what that operation was (when lastSeq > 0)
  uint64_t thisRankSeq;       ///< the number of operations this rank has started
} strataPeerState_t;

strataResult_t strataCommGetPeerState(const strataComm_t comm, int peer, strataPeerState_t* state);

/// Host memory that the other ranks of this host can map (as ncclMemAlloc):
/// collectives whose buffers lie in it move large messages between ranks of
/// one host with one user-space copy, the peer reading (or reducing) the
/// bytes where they lie, instead of two through the shared-memory ring.
/// Ordinary memory otherwise (any collective, any communicator, device
/// transfers included). Page-aligned, zero-filled. Free with strataMemFree
/// (NULL is ignored). POSIX shared memory: a process killed while holding
/// some leaves their names in /dev/shm (strata-mem-PID-N).
strataResult_t strataMemAlloc(void** ptr, size_t size);
strataResult_t strataMemFree(void* ptr);

/// Operations between GroupStart and GroupEnd are issued together at GroupEnd;
/// send/recv pairs inside a group never deadlock. Groups nest.
strataResult_t strataGroupStart(void);
strataResult_t strataGroupEnd(void);

/// Fusion of grouped collectives: between strataGroupStart and strataGroupEnd,
/// collectives with the same collective, datatype, op and root run as one
/// collective over a fused buffer of up to STRATA_FUSION_THRESHOLD bytes (0
/// turns this off). Fused operations run together, so their buffers must not
/// overlap (strataInvalidArgument), and their order inside the group is not
/// a promise. Every rank must issue the same list; a list that differs in
/// sizes fails with strataMismatch.

/// A fusion context (Horovod-style tensor fusion) for trainers that produce
/// gradients one at a time: tensors added under a key are all-reduced by a
/// background thread in fused buffers, flushed when the pending bytes reach
/// STRATA_FUSION_THRESHOLD, when STRATA_FUSION_CYCLE_US passes, or on
/// strataFusionFlush. Ranks may add tensors in different orders: tensors are
/// matched by key; a key added with a different count, datatype or op on
/// another rank completes with strataMismatch. While tensors are in flight
/// the communicator belongs to the context (other calls on it return
/// strataInvalidUsage).
typedef struct strataFusion* strataFusion_t;
/// Completion of one added tensor: strataFusionTest / strataFusionWait.
typedef struct strataFusionRequest* strataFusionRequest_t;
/// Called on the context's thread when a tensor's result is in recvbuff (or it
/// failed). It may add tensors; it must not wait for requests.
typedef void (*strataFusionCallback_t)(uint64_t key, strataResult_t result, void* userData);

strataResult_t strataFusionCreate(strataFusion_t* fusion, strataComm_t comm);
/// Adds an all-reduce of count elements under `key` (unique among the
/// context's tensors not completed yet; strataInvalidUsage otherwise; free
/// again once its tensor completed, even inside its callback). `callback` and
/// `request` are both optional; a request must be released by strataFusionWait
/// or a strataFusionTest that reports done. Buffers must stay valid until the
/// tensor completes.
strataResult_t strataFusionAllReduce(strataFusion_t fusion, uint64_t key, const void* sendbuff,
                                     void* recvbuff, size_t count, strataDataType_t datatype,
                                     strataRedOp_t op, strataFusionCallback_t callback,
                                     void* userData, strataFusionRequest_t* request);
/// Flushes every pending tensor now, without waiting.
strataResult_t strataFusionFlush(strataFusion_t fusion);
/// Sets *done; when done, returns the tensor's result, releases the request
/// and sets *request to NULL.
strataResult_t strataFusionTest(strataFusionRequest_t* request, int* done);
/// Waits for the tensor; returns its result, releases the request, sets *request to NULL.
strataResult_t strataFusionWait(strataFusionRequest_t* request);
/// Flushes and waits until every added tensor completed; returns the first failure.
strataResult_t strataFusionSynchronize(strataFusion_t fusion);
/// Flushes, waits for pending tensors (they complete or fail within the
/// communicator's timeout) and frees the context.
strataResult_t strataFusionDestroy(strataFusion_t fusion);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // STRATA_STRATA_H_
