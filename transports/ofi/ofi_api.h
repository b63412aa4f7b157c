// libfabric, loaded at run time (dlopen "libfabric.so.1") so that libstrata
// runs on machines without it and picks it up where it is installed. Only
// the handful of real functions are looked up here; everything else in
// libfabric's API is inline calls through the objects' ops tables.
#pragma once

#include <rdma/fabric.h>

#include <string>

namespace strata {

struct OfiApi {
  decltype(&fi_getinfo) getinfo = nullptr;
  decltype(&fi_freeinfo) freeinfo = nullptr;
  decltype(&fi_dupinfo) dupinfo = nullptr;
  decltype(&fi_fabric) fabric = nullptr;
  decltype(&fi_strerror) strerror = nullptr;
  decltype(&fi_version) version = nullptr;
};

// The loaded library, or nullptr with the reason in *why.
const OfiApi* ofiApi(std::string* why);

// fi_strerror of a negative libfabric return code, with the number.
std::string ofiError(int rc);

// The libfabric API version strata asks for.
constexpr uint32_t kOfiApiVersion = FI_VERSION(1, 9);

}  // namespace strata
