// libFuzzer target: every fixed-layout decoder of what peers send at set-up
// and in operation headers. The first input byte picks the decoder; the rest
// is its input. A decoder must reject or accept without crashing, reading out
// of bounds or allocating without bound; what it accepts must re-encode to a
// value that decodes the same.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algo/plan.h"
#include "bootstrap/wire.h"
#include "core/error.h"
#include "topo/topo_json.h"
#include "transports/net/tagged_channel.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

using namespace strata;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// The bytes after the selector, padded with zeros to n (fixed-size decoders).
std::vector<uint8_t> fixed(const uint8_t* p, size_t n, size_t want) {
  std::vector<uint8_t> b(want, 0);
  std::memcpy(b.data(), p, n < want ? n : want);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  switch (data[0] % 8) {
    case 0: {  // Hello: the secret is taken from the input so the checks past it are reached
      std::vector<uint8_t> b = fixed(p, n, kHelloBytes);
      Secret secret;
      std::memcpy(secret.data(), b.data() + 8, 16);
      Hello h;
      std::string why;
      if (decodeHello(b.data(), secret, &h, &why)) {
        check(h.nranks > 0 && h.nranks <= kMaxRanks && h.fromRank < h.nranks && h.toRank < h.nranks);
        uint8_t again[kHelloBytes];
        encodeHello(h, again);
        Hello h2;
        check(decodeHello(again, secret, &h2, &why) && h2.fromRank == h.fromRank && h2.nranks == h.nranks);
      } else {
        check(!why.empty());
      }
      break;
    }
    case 1: {
      std::vector<uint8_t> b = fixed(p, n, STRATA_UNIQUE_ID_BYTES);
      strataUniqueId id;
      std::memcpy(id.internal, b.data(), sizeof(id.internal));
      UniqueIdData d;
      std::string why;
      if (!decodeUniqueId(id, &d, &why)) check(!why.empty());
      break;
    }
    case 2: {
      std::vector<uint8_t> b = fixed(p, n, kRankInfoBytes);
      RankInfo r = decodeRankInfo(b.data());
      uint8_t again[kRankInfoBytes];
      encodeRankInfo(r, again);
      RankInfo r2 = decodeRankInfo(again);
      check(r2.hostHash == r.hostHash && r2.pid == r.pid && r2.addr.port == r.addr.port &&
            r2.recoveryPort == r.recoveryPort);
      break;
    }
    case 3: {
      std::vector<uint8_t> b = fixed(p, n, kOpDescBytes);
      OpDesc d;
      if (decodeOpDesc(b.data(), &d)) {
        (void)d.describe();
        uint8_t again[kOpDescBytes];
        encodeOpDesc(d, again);
        OpDesc d2;
        check(decodeOpDesc(again, &d2) && descMatches(d, d2) == descMatches(d2, d));
      }
      break;
    }
    case 4: {
      strataResult_t code;
      std::string msg;
      if (decodeAbortPayload(p, n, &code, &msg)) check(code > 0 && code < strataNumResults && msg.size() < n);
      uint64_t seq;
      (void)decodeArrivedPayload(p, n, &seq);
      break;
    }
    case 5: {  // what follows a Hello: the blob length, then a transport's blob
      if (n >= kBlobLengthBytes) {
        int64_t len = decodeSetupBlobLength(p);
        check(len <= int64_t(kMaxSetupBlobBytes));
      }
      SetupBlob blob(p, p + (n < kMaxSetupBlobBytes ? n : kMaxSetupBlobBytes));
      try {
        (void)decodeExtra(blob, 1);
      } catch (const Error&) {
      }
      try {
        TaggedSetup s = decodeSetup(blob, 1, "ofi");
        check(s.slots >= 2 && s.slots <= 4096 && s.address.size() <= blob.size());
      } catch (const Error&) {
      }
      break;
    }
    default: {  // a topology file (STRATA_TOPO_FILE): JSON from the user
      std::string text(reinterpret_cast<const char*>(p), n);
      try {
        (void)topologyFromJson(text, 1 + int(data[0] >> 4), "fuzz");
      } catch (const Error&) {
      }
      break;
    }
  }
  return 0;
}
