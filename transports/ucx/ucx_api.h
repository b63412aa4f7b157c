// UCX's UCP layer, loaded at run time (dlopen "libucp.so.0") so that
// libstrata runs on machines without UCX and uses it where it is installed.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace strata {

struct UcxApi {
  decltype(&ucp_config_read) configRead = nullptr;
  decltype(&ucp_config_release) configRelease = nullptr;
  decltype(&ucp_config_modify) configModify = nullptr;
  decltype(&ucp_init_version) initVersion = nullptr;
  decltype(&ucp_cleanup) cleanup = nullptr;
  decltype(&ucp_worker_create) workerCreate = nullptr;
  decltype(&ucp_worker_destroy) workerDestroy = nullptr;
  decltype(&ucp_worker_get_address) workerGetAddress = nullptr;
  decltype(&ucp_worker_release_address) workerReleaseAddress = nullptr;
  decltype(&ucp_worker_progress) workerProgress = nullptr;
  decltype(&ucp_ep_create) epCreate = nullptr;
  decltype(&ucp_ep_close_nbx) epCloseNbx = nullptr;
  decltype(&ucp_tag_send_nbx) tagSendNbx = nullptr;
  decltype(&ucp_tag_recv_nbx) tagRecvNbx = nullptr;
  decltype(&ucp_request_check_status) requestCheckStatus = nullptr;
  decltype(&ucp_request_cancel) requestCancel = nullptr;
  decltype(&ucp_request_free) requestFree = nullptr;
  decltype(&ucp_get_version_string) versionString = nullptr;
  decltype(&ucs_status_string) statusString = nullptr;
};

// The loaded library, or nullptr with the reason in *why.
const UcxApi* ucxApi(std::string* why);

}  // namespace strata
