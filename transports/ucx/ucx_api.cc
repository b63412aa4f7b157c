#include "transports/ucx/ucx_api.h"

#include <dlfcn.h>

#include "core/error.h"

namespace strata {

namespace {

struct Loaded {
  UcxApi api;
  bool ok = false;
  std::string why;
};

template <typename F>
bool lookup(void* lib, const char* name, F* out, std::string* why) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) *why = format("libucp.so.0 has no %s (UCX 1.10 or newer is needed)", name);
  return *out != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = format("cannot load libucp.so.0 (%s); install libucx0", e ? e : "not found");
    return l;
  }
  UcxApi& a = l.api;
  l.ok = lookup(lib, "ucp_config_read", &a.configRead, &l.why) &&
         lookup(lib, "ucp_config_release", &a.configRelease, &l.why) &&
         lookup(lib, "ucp_config_modify", &a.configModify, &l.why) &&
         lookup(lib, "ucp_init_version", &a.initVersion, &l.why) &&
         lookup(lib, "ucp_cleanup", &a.cleanup, &l.why) &&
         lookup(lib, "ucp_worker_create", &a.workerCreate, &l.why) &&
         lookup(lib, "ucp_worker_destroy", &a.workerDestroy, &l.why) &&
         lookup(lib, "ucp_worker_get_address", &a.workerGetAddress, &l.why) &&
         lookup(lib, "ucp_worker_release_address", &a.workerReleaseAddress, &l.why) &&
         lookup(lib, "ucp_worker_progress", &a.workerProgress, &l.why) &&
         lookup(lib, "ucp_ep_create", &a.epCreate, &l.why) &&
         lookup(lib, "ucp_ep_close_nbx", &a.epCloseNbx, &l.why) &&
         lookup(lib, "ucp_tag_send_nbx", &a.tagSendNbx, &l.why) &&
         lookup(lib, "ucp_tag_recv_nbx", &a.tagRecvNbx, &l.why) &&
         lookup(lib, "ucp_request_check_status", &a.requestCheckStatus, &l.why) &&
         lookup(lib, "ucp_request_cancel", &a.requestCancel, &l.why) &&
         lookup(lib, "ucp_request_free", &a.requestFree, &l.why) &&
         lookup(lib, "ucp_get_version_string", &a.versionString, &l.why) &&
         lookup(lib, "ucs_status_string", &a.statusString, &l.why);
  return l;
}

}  // namespace

const UcxApi* ucxApi(std::string* why) {
  static Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace strata
