#include "transports/ofi/mr_cache.h"

#include "core/error.h"
#include "transports/ofi/ofi_api.h"

namespace strata {

MrCache::~MrCache() {
  for (fid_mr* mr : all_) fi_close(&mr->fid);
}

void* MrCache::descriptor(void* buf, size_t len) {
  uintptr_t start = reinterpret_cast<uintptr_t>(buf), end = start + len;
  auto it = regions_.upper_bound(start);
  if (it != regions_.begin()) {
    --it;
    if (it->first <= start && end <= it->second.end) {
      ++hits_;
      return fi_mr_desc(it->second.mr);
    }
  }
  fid_mr* mr = nullptr;
  int rc = fi_mr_reg(domain_, buf, len, FI_SEND | FI_RECV, 0, all_.size(), 0, &mr, nullptr);
  if (rc != 0)
    fail(strataSystemError, "libfabric %s could not register %zu bytes of memory: %s", provider_,
         len, ofiError(rc).c_str());
  all_.push_back(mr);
  regions_[start] = Region{end, mr};  // a larger region at the same start supersedes
  return fi_mr_desc(mr);
}

}  // namespace strata
