// extern "C" entry points for collectives and send/recv.
#include "api/collectives.h"
#include "api/entry.h"
#include "device/device_ops.h"
#include "exec/any_source.h"

using namespace strata;

namespace {

// Validates, then queues into the current group, enqueues on the stream
// (device buffers) or runs now (host buffers, after any device operations
// enqueued before on this communicator).
strataResult_t submit(const char* fn, strataComm_t handle, Request r, strataStream_t stream) {
  Comm* comm = nullptr;
  return guarded(fn, comm, [&] {
    comm = liveComm(handle, fn);
    if (comm->fusionBusy)
      fail(strataInvalidUsage, "%s: a fusion context on this communicator has tensors in flight; call "
           "strataFusionSynchronize first (or use another communicator)", fn);
    r.comm = comm;
    r.stream = stream;
    if (inGroup()) {
      validateQueued(fn, r);  // runs later: its record starts then
      enqueue(r);
      return;
    }
    if (runRepeatedCall(r)) return;
    validate(fn, r);  // sets calledTick, but for a repeated call
    if (r.onDevice) {
      r.calledTick = 0;
      enqueueDeviceRequest(r);
    } else {
      drainDeviceQueue(*comm);
      r.remembersPlan = true;
      if (r.coll == Coll::kSend || r.coll == Coll::kRecv) runP2P(*comm, {r});
      else runCollective(r);
    }
  });
}

Request make(Coll coll, const void* send, void* recv, size_t count, strataDataType_t dtype,
             strataRedOp_t op, int root) {
  Request r;
  r.coll = coll;
  r.send = send;
  r.recv = recv;
  r.count = count;
  r.dtype = dtype;
  r.redop = op;
  r.root = root;
  return r;
}

}  // namespace

extern "C" {

strataResult_t strataAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               strataDataType_t datatype, strataRedOp_t op, strataComm_t comm,
                               strataStream_t stream) {
  return submit("strataAllReduce", comm,
                make(Coll::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0), stream);
}

strataResult_t strataReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   strataDataType_t datatype, strataRedOp_t op, strataComm_t comm,
                                   strataStream_t stream) {
  return submit("strataReduceScatter", comm,
                make(Coll::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0), stream);
}

strataResult_t strataAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               strataDataType_t datatype, strataComm_t comm, strataStream_t stream) {
  return submit("strataAllGather", comm,
                make(Coll::kAllGather, sendbuff, recvbuff, sendcount, datatype, strataSum, 0), stream);
}

strataResult_t strataBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               strataDataType_t datatype, int root, strataComm_t comm,
                               strataStream_t stream) {
  return submit("strataBroadcast", comm,
                make(Coll::kBroadcast, sendbuff, recvbuff, count, datatype, strataSum, root), stream);
}

strataResult_t strataReduce(const void* sendbuff, void* recvbuff, size_t count,
                            strataDataType_t datatype, strataRedOp_t op, int root,
                            strataComm_t comm, strataStream_t stream) {
  return submit("strataReduce", comm,
                make(Coll::kReduce, sendbuff, recvbuff, count, datatype, op, root), stream);
}

strataResult_t strataAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              strataDataType_t datatype, strataComm_t comm, strataStream_t stream) {
  return submit("strataAllToAll", comm,
                make(Coll::kAllToAll, sendbuff, recvbuff, count, datatype, strataSum, 0), stream);
}

strataResult_t strataSend(const void* sendbuff, size_t count, strataDataType_t datatype, int peer,
                          strataComm_t comm, strataStream_t stream) {
  return submit("strataSend", comm,
                make(Coll::kSend, sendbuff, nullptr, count, datatype, strataSum, peer), stream);
}

strataResult_t strataRecv(void* recvbuff, size_t count, strataDataType_t datatype, int peer,
                          strataComm_t comm, strataStream_t stream) {
  return submit("strataRecv", comm,
                make(Coll::kRecv, nullptr, recvbuff, count, datatype, strataSum, peer), stream);
}

strataResult_t strataRecvAny(void* recvbuff, size_t count, strataDataType_t datatype, int* peer,
                             strataComm_t handle, strataStream_t) {
  const char* fn = "strataRecvAny";
  Comm* comm = nullptr;
  return guarded(fn, comm, [&] {
    comm = liveComm(handle, fn);
    if (!peer) fail(strataInvalidArgument, "%s: peer is NULL (it receives the sending rank)", fn);
    *peer = -1;
    if (inGroup())
      fail(strataInvalidUsage, "%s: not allowed between strataGroupStart and strataGroupEnd (the "
           "source must be known before the group's operations are matched)", fn);
    if (comm->fusionBusy)
      fail(strataInvalidUsage, "%s: a fusion context on this communicator has tensors in flight; call "
           "strataFusionSynchronize first (or use another communicator)", fn);
    if (count == 0)
      fail(strataInvalidArgument, "%s: count is 0; zero-element sends are not transmitted, so no "
           "sender can be matched", fn);
    if (comm->nranks() == 1)
      fail(strataInvalidArgument, "%s: the communicator has one rank, so no rank can send to it", fn);
    Request r = make(Coll::kRecv, nullptr, recvbuff, count, datatype, strataSum,
                     comm->rank() == 0 ? 1 : 0);
    r.comm = comm;
    validate(fn, r);  // buffer, count and datatype (the peer is a placeholder)
    if (r.onDevice)
      fail(strataUnsupported, "%s: device buffers are not supported (the sender must be known before the "
           "receive is enqueued on a stream); receive into host memory, or use strataRecv", fn);
    drainDeviceQueue(*comm);
    r.root = awaitAnySender(*comm);
    runP2P(*comm, {r});
    *peer = r.root;
  });
}

strataResult_t strataBarrier(strataComm_t comm, strataStream_t stream) {
  return submit("strataBarrier", comm, make(Coll::kBarrier, nullptr, nullptr, 0, strataUint8, strataMax, 0),
                stream);
}

}  // extern "C"
