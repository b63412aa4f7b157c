// Memory registrations of one libfabric domain, reused: a buffer inside a
// region registered before gets that region's descriptor. Providers that need
// registered local buffers (FI_MR_LOCAL: efa, verbs) pay the pinning once per
// region, not per message. Registrations last as long as the domain.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstdint>
#include <map>
#include <vector>

namespace strata {

class MrCache {
 public:
  explicit MrCache(fid_domain* domain, const char* provider) : domain_(domain), provider_(provider) {}
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // The descriptor covering [buf, buf + len), registering it if needed.
  // Throws strataSystemError naming the provider when registration fails.
  void* descriptor(void* buf, size_t len);
  size_t registrations() const { return all_.size(); }
  size_t hits() const { return hits_; }

 private:
  struct Region {
    uintptr_t end;
    fid_mr* mr;
  };
  fid_domain* domain_;
  const char* provider_;
  std::map<uintptr_t, Region> regions_;  // by start address
  std::vector<fid_mr*> all_;             // every registration, closed with the cache
  size_t hits_ = 0;
};

}  // namespace strata
