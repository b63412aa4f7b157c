#include "transports/ofi/ofi_api.h"

#include <dlfcn.h>
#include <stdlib.h>


#include "core/error.h"

namespace strata {

namespace {

struct Loaded {
  OfiApi api;
  bool ok = false;
  std::string why;
};

template <typename F>
bool lookup(void* lib, const char* name, F* out, std::string* why) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) *why = format("libfabric.so.1 has no %s", name);
  return *out != nullptr;
}

// Provider settings strata relies on, applied before libfabric reads its
// environment (at the first fi_getinfo) and only where the user set none:
// rxm over tcp sends messages up to one packet (STRATA_NET_SLOT_BYTES'
// default) eagerly, straight into the posted receive, instead of a
// rendezvous round trip per packet (measured: 64 MiB all-reduce between two
// namespaces 1.1 -> 1.6 GB/s; no extra memory, unlike FI_OFI_RXM_BUFFER_SIZE).
void setProviderDefaults() {
  setenv("FI_OFI_RXM_EAGER_LIMIT", "262144", 0);
  setenv("FI_OFI_RXM_SAR_LIMIT", "524288", 0);
}

Loaded load() {
  setProviderDefaults();
  Loaded l;
  void* lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = format("cannot load libfabric.so.1 (%s); install libfabric1", e ? e : "not found");
    return l;
  }
  OfiApi& a = l.api;
  l.ok = lookup(lib, "fi_getinfo", &a.getinfo, &l.why) &&
         lookup(lib, "fi_freeinfo", &a.freeinfo, &l.why) &&
         lookup(lib, "fi_dupinfo", &a.dupinfo, &l.why) &&
         lookup(lib, "fi_fabric", &a.fabric, &l.why) &&
         lookup(lib, "fi_strerror", &a.strerror, &l.why) &&
         lookup(lib, "fi_version", &a.version, &l.why);
  if (l.ok && FI_MAJOR(a.version()) == 1 && FI_MINOR(a.version()) < 9) {
    l.ok = false;
    l.why = format("libfabric %u.%u is too old (1.9 or newer needed)", FI_MAJOR(a.version()),
                   FI_MINOR(a.version()));
  }
  return l;
}

}  // namespace

const OfiApi* ofiApi(std::string* why) {
  static Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

std::string ofiError(int rc) {
  const OfiApi* api = ofiApi(nullptr);
  return format("%s (%d)", api ? api->strerror(rc < 0 ? -rc : rc) : "libfabric not loaded", rc);
}

}  // namespace strata
