// extern "C" entry points of the fusion context (src/fusion/context.h).
#include <memory>

#include "api/entry.h"
#include "api/live_registry.h"
#include "device/device_ops.h"
#include "fusion/context.h"

using namespace strata;

struct strataFusion {
  std::unique_ptr<FusionContext> context;
};
struct strataFusionRequest {
  std::shared_ptr<FusionCompletion> completion;
};

namespace {

using FusionRegistry = LiveRegistry<strataFusion>;

FusionContext& liveContext(strataFusion_t f, const char* fn, Comm*& comm) {
  if (!FusionRegistry::get().isLive(f)) fail(strataInvalidArgument, "%s: not a live fusion context", fn);
  comm = &f->context->comm();
  return *f->context;
}

strataResult_t finishRequest(strataFusionRequest_t* request) {
  FusionCompletion& c = *(*request)->completion;
  strataResult_t r = c.result;
  if (r != strataSuccess) setThreadLastError(c.error);
  delete *request;
  *request = nullptr;
  return r;
}

}  // namespace

extern "C" {

strataResult_t strataFusionCreate(strataFusion_t* fusion, strataComm_t comm) {
  Comm* c = nullptr;
  return guarded("strataFusionCreate", c, [&] {
    if (!fusion) fail(strataInvalidArgument, "strataFusionCreate: the fusion pointer is NULL");
    c = liveComm(comm, "strataFusionCreate");
    auto* f = new strataFusion{std::make_unique<FusionContext>(*c)};
    FusionRegistry::get().insert(f);
    *fusion = f;
  });
}

strataResult_t strataFusionAllReduce(strataFusion_t fusion, uint64_t key, const void* sendbuff, void* recvbuff,
                                     size_t count, strataDataType_t datatype, strataRedOp_t op,
                                     strataFusionCallback_t callback, void* userData,
                                     strataFusionRequest_t* request) {
  Comm* c = nullptr;
  return guarded("strataFusionAllReduce", c, [&] {
    FusionContext& ctx = liveContext(fusion, "strataFusionAllReduce", c);
    if (request) *request = nullptr;
    Request r;
    r.comm = c;
    r.coll = Coll::kAllReduce;
    r.send = sendbuff;
    r.recv = recvbuff;
    r.count = count;
    r.dtype = datatype;
    r.redop = op;
    validateQueued("strataFusionAllReduce", r);
    if (r.onDevice)
      fail(strataUnsupported, "strataFusionAllReduce: device buffers are not supported by fusion contexts yet; "
           "all-reduce them with strataAllReduce between strataGroupStart and strataGroupEnd (fused)");
    drainDeviceQueue(*c);
    auto done = ctx.add(key, r, callback, userData, request != nullptr);
    if (request) *request = new strataFusionRequest{done};
  });
}

strataResult_t strataFusionFlush(strataFusion_t fusion) {
  Comm* c = nullptr;
  return guarded("strataFusionFlush", c, [&] { liveContext(fusion, "strataFusionFlush", c).flush(); });
}

strataResult_t strataFusionTest(strataFusionRequest_t* request, int* done) {
  Comm* c = nullptr;
  strataResult_t result = strataSuccess;
  strataResult_t rc = guarded("strataFusionTest", c, [&] {
    if (!request || !*request || !done) fail(strataInvalidArgument, "strataFusionTest: NULL request or done pointer");
    FusionCompletion& comp = *(*request)->completion;
    {
      std::lock_guard<std::mutex> lock(comp.mu);
      *done = comp.done;
    }
    if (*done) result = finishRequest(request);
  });
  return rc != strataSuccess ? rc : result;
}

strataResult_t strataFusionWait(strataFusionRequest_t* request) {
  Comm* c = nullptr;
  strataResult_t result = strataSuccess;
  strataResult_t rc = guarded("strataFusionWait", c, [&] {
    if (!request || !*request) fail(strataInvalidArgument, "strataFusionWait: NULL request");
    (*request)->completion->wait();
    result = finishRequest(request);
  });
  return rc != strataSuccess ? rc : result;
}

strataResult_t strataFusionSynchronize(strataFusion_t fusion) {
  Comm* c = nullptr;
  return guarded("strataFusionSynchronize", c,
                 [&] { liveContext(fusion, "strataFusionSynchronize", c).synchronize(); });
}

strataResult_t strataFusionDestroy(strataFusion_t fusion) {
  Comm* c = nullptr;
  return guarded("strataFusionDestroy", c, [&] {
    liveContext(fusion, "strataFusionDestroy", c);
    FusionRegistry::get().erase(fusion);
    delete fusion;  // flushes and waits for pending tensors
  });
}

}  // extern "C"
