// Everything strata puts on the wire during set-up, with explicit encoders and
// validating decoders (fixed sizes, little-endian, no pointers):
//  - UniqueIdData: what strataUniqueId carries (root address + secret).
//  - Hello: the first bytes of every connection, bootstrap or data. It carries
//    the magic, the protocol version and the communicator's 128-bit secret; a
//    connection whose Hello does not parse is closed and logged.
//  - RankInfo: what each rank tells the root (address, host identity, pid).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/socket.h"
#include "strata/strata.h"

namespace strata {

constexpr uint32_t kWireMagic = 0x41525453;  // "STRA"
constexpr uint16_t kProtocolVersion = 6;  // 5: the GOODBYE frame; 6: kLinkRefused

// The most ranks a communicator may have: bounds what a Hello's nranks can
// make the bootstrap root allocate.
constexpr int32_t kMaxRanks = 1 << 20;

using Secret = std::array<uint8_t, 16>;
Secret randomSecret();
// A secret every process derives alike from the same text (env init, shrink).
Secret secretFromText(const std::string& text);
// Compares without early exit, so timing does not leak the secret.
bool secretsEqual(const Secret& a, const Secret& b);

struct UniqueIdData {
  SockAddr root;
  Secret secret{};
};
void encodeUniqueId(const UniqueIdData& d, strataUniqueId* out);
// Returns false and a reason if the bytes are not a strata unique id.
bool decodeUniqueId(const strataUniqueId& id, UniqueIdData* out, std::string* why);

// kLinkRefused: a data link's Hello saying that the sender could not set up
// its side of the link; the set-up blob carries the reason as text, so the
// peer fails at once with it instead of waiting out its timeout.
enum class HelloKind : uint16_t { kBootstrap = 1, kData = 2, kLinkRefused = 3 };

struct Hello {
  HelloKind kind = HelloKind::kBootstrap;
  Secret secret{};
  int32_t nranks = 0;
  int32_t fromRank = -1;
  int32_t toRank = -1;  // -1 for the bootstrap root
  uint32_t transportId = 0;  // data links: the transport the sender chose
};
constexpr size_t kHelloBytes = 40;
void encodeHello(const Hello& h, uint8_t out[kHelloBytes]);
// Validates magic, version, kind and secret. On failure returns false with a
// sentence in *why naming what was wrong (never the secret itself).
bool decodeHello(const uint8_t in[kHelloBytes], const Secret& expected, Hello* out,
                 std::string* why);

struct RankInfo {
  SockAddr addr;          // where this rank accepts data connections
  uint64_t hostHash = 0;  // equal for ranks on one host (STRATA_HOSTID overrides)
  int32_t pid = 0;
  int32_t numa = -1;      // NUMA node of the rank's CPU at init (-1: unknown)
  uint16_t recoveryPort = 0;  // same address: where strataCommShrink's rendezvous may run
  // Where the rank may run (topo/topology.h, RankCpus): its machine's kernel
  // (boot id hash, 0: unknown), its CPU affinity set (hash) and CPU count.
  uint32_t kernel = 0;
  uint32_t cpuSet = 0;
  uint16_t cpus = 0;
};
constexpr size_t kRankInfoBytes = 40;
void encodeRankInfo(const RankInfo& r, uint8_t out[kRankInfoBytes]);
RankInfo decodeRankInfo(const uint8_t in[kRankInfoBytes]);

// FNV-1a, used for host identities.
uint64_t hash64(const std::string& s);

}  // namespace strata
