#include "device/staged_request.h"

#include <algorithm>

#include "core/dtype.h"

namespace strata {

namespace {

size_t roundUp64(size_t bytes) { return (bytes + 63) & ~size_t(63); }

// Rows of `count` elements in the send / receive buffer.
size_t sendRows(const Request& r, WorldPlace at) {
  return r.coll == Coll::kReduceScatter || r.coll == Coll::kAllToAll ? size_t(at.nranks) : 1;
}
size_t recvRows(const Request& r, WorldPlace at) {
  return r.coll == Coll::kAllGather || r.coll == Coll::kAllToAll ? size_t(at.nranks) : 1;
}

bool readsSend(const Request& r, WorldPlace at) {
  if (r.coll == Coll::kRecv) return false;
  return r.coll != Coll::kBroadcast || at.rank == r.root;
}
bool writesRecv(const Request& r, WorldPlace at) {
  if (r.coll == Coll::kSend) return false;
  return r.coll != Coll::kReduce || at.rank == r.root;
}

}  // namespace

size_t stagingRowsPerElement(const Request& r, WorldPlace at) {
  return r.coll == Coll::kAllToAll ? sendRows(r, at) + recvRows(r, at) : std::max(sendRows(r, at), recvRows(r, at));
}

size_t stagingBytes(const Request& r, WorldPlace at, size_t elements) {
  return roundUp64(stagingRowsPerElement(r, at) * elements * dtypeSize(r.dtype));
}

StagedPiece stagePiece(const Request& r, WorldPlace at, size_t offset, size_t elements, uint8_t* area) {
  const size_t e = dtypeSize(r.dtype), rowBytes = elements * e, pitch = r.count * e;
  const size_t me = size_t(at.rank);
  StagedPiece p;
  p.host = r;
  p.host.count = elements;
  // The host collective's in-place layout in the area (all-to-all, which has
  // none, gets its output rows after its input rows).
  uint8_t* hostSend = area;
  uint8_t* hostRecv = area;
  switch (r.coll) {
    case Coll::kReduceScatter: hostRecv = area + me * rowBytes; break;
    case Coll::kAllGather: hostSend = area + me * rowBytes; break;
    case Coll::kAllToAll: hostRecv = area + sendRows(r, at) * rowBytes; break;
    default: break;
  }
  p.host.inPlace = r.coll != Coll::kAllToAll && r.coll != Coll::kSend && r.coll != Coll::kRecv;
  p.host.send = r.coll == Coll::kRecv ? nullptr : hostSend;
  p.host.recv = r.coll == Coll::kSend ? nullptr : hostRecv;
  p.host.stream = nullptr;
  p.host.onDevice = false;
  if (readsSend(r, at) && rowBytes)
    p.copyIn = RowCopy{hostSend, static_cast<const uint8_t*>(r.send) + offset * e, rowBytes, sendRows(r, at),
                       rowBytes, pitch};
  // The root of a broadcast in place on the device already holds the result.
  const bool resultAlreadyThere = r.coll == Coll::kBroadcast && r.inPlace && int(me) == r.root;
  if (writesRecv(r, at) && rowBytes && !resultAlreadyThere)
    p.copyOut = RowCopy{static_cast<uint8_t*>(r.recv) + offset * e, hostRecv, rowBytes, recvRows(r, at), pitch,
                        rowBytes};
  return p;
}

}  // namespace strata
