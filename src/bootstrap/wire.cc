#include "bootstrap/wire.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "core/error.h"

namespace strata {

namespace {

void put32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i)); }
void put16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
void put64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

constexpr uint32_t kIdMagic = 0x44495453;  // "STID"

}  // namespace

Secret randomSecret() {
  Secret s{};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && ::read(fd, s.data(), s.size()) == ssize_t(s.size());
  if (fd >= 0) ::close(fd);
  if (!ok) {
    std::random_device rd;
    for (auto& b : s) b = uint8_t(rd());
  }
  return s;
}

Secret secretFromText(const std::string& text) {
  Secret s{};
  uint64_t a = hash64("strata-secret-a:" + text), b = hash64("strata-secret-b:" + text);
  std::memcpy(s.data(), &a, 8);
  std::memcpy(s.data() + 8, &b, 8);
  return s;
}

bool secretsEqual(const Secret& a, const Secret& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

// Layout: magic(4) version(2) port(2) ip(4, network order) secret(16) zero padding.
void encodeUniqueId(const UniqueIdData& d, strataUniqueId* out) {
  std::memset(out->internal, 0, sizeof(out->internal));
  auto* p = reinterpret_cast<uint8_t*>(out->internal);
  put32(p, kIdMagic);
  put16(p + 4, kProtocolVersion);
  put16(p + 6, d.root.port);
  std::memcpy(p + 8, &d.root.ip, 4);
  std::memcpy(p + 12, d.secret.data(), 16);
}

bool decodeUniqueId(const strataUniqueId& id, UniqueIdData* out, std::string* why) {
  auto* p = reinterpret_cast<const uint8_t*>(id.internal);
  if (get32(p) != kIdMagic) {
    *why = "the unique id was not made by strataGetUniqueId (bad magic)";
    return false;
  }
  if (get16(p + 4) != kProtocolVersion) {
    *why = format("the unique id has protocol version %u, this library speaks %u",
                  unsigned(get16(p + 4)), unsigned(kProtocolVersion));
    return false;
  }
  out->root.port = get16(p + 6);
  std::memcpy(&out->root.ip, p + 8, 4);
  std::memcpy(out->secret.data(), p + 12, 16);
  if (out->root.port == 0) {
    *why = "the unique id names no root port";
    return false;
  }
  return true;
}

// Layout: magic(4) version(2) kind(2) secret(16) nranks(4) from(4) to(4) transport(4).
void encodeHello(const Hello& h, uint8_t out[kHelloBytes]) {
  std::memset(out, 0, kHelloBytes);
  put32(out, kWireMagic);
  put16(out + 4, kProtocolVersion);
  put16(out + 6, uint16_t(h.kind));
  std::memcpy(out + 8, h.secret.data(), 16);
  put32(out + 24, uint32_t(h.nranks));
  put32(out + 28, uint32_t(h.fromRank));
  put32(out + 32, uint32_t(h.toRank));
  put32(out + 36, h.transportId);
}

bool decodeHello(const uint8_t in[kHelloBytes], const Secret& expected, Hello* out,
                 std::string* why) {
  if (get32(in) != kWireMagic) {
    *why = "not a strata peer (bad magic)";
    return false;
  }
  uint16_t version = get16(in + 4);
  if (version != kProtocolVersion) {
    *why = format("protocol version %u, expected %u", unsigned(version), unsigned(kProtocolVersion));
    return false;
  }
  uint16_t kind = get16(in + 6);
  if (kind != uint16_t(HelloKind::kBootstrap) && kind != uint16_t(HelloKind::kData) &&
      kind != uint16_t(HelloKind::kLinkRefused)) {
    *why = format("unknown connection kind %u", unsigned(kind));
    return false;
  }
  Secret got;
  std::memcpy(got.data(), in + 8, 16);
  if (!secretsEqual(got, expected)) {
    *why = "wrong communicator secret";
    return false;
  }
  out->kind = HelloKind(kind);
  out->secret = got;
  out->nranks = int32_t(get32(in + 24));
  out->fromRank = int32_t(get32(in + 28));
  out->toRank = int32_t(get32(in + 32));
  out->transportId = get32(in + 36);
  if (out->nranks <= 0 || out->nranks > kMaxRanks || out->fromRank < 0 || out->fromRank >= out->nranks ||
      out->toRank < -1 || out->toRank >= out->nranks) {
    *why = format("invalid ranks (nranks %d, from %d, to %d)", out->nranks, out->fromRank,
                  out->toRank);
    return false;
  }
  return true;
}

// Layout: ip(4, network order) port(2) recoveryPort(2) hostHash(8) pid(4) numa(4) kernel(4) cpuSet(4)
// cpus(2) zero padding.
void encodeRankInfo(const RankInfo& r, uint8_t out[kRankInfoBytes]) {
  std::memset(out, 0, kRankInfoBytes);
  std::memcpy(out, &r.addr.ip, 4);
  put16(out + 4, r.addr.port);
  put16(out + 6, r.recoveryPort);
  put64(out + 8, r.hostHash);
  put32(out + 16, uint32_t(r.pid));
  put32(out + 20, uint32_t(r.numa));
  put32(out + 24, r.kernel);
  put32(out + 28, r.cpuSet);
  put16(out + 32, r.cpus);
}

RankInfo decodeRankInfo(const uint8_t in[kRankInfoBytes]) {
  RankInfo r;
  std::memcpy(&r.addr.ip, in, 4);
  r.addr.port = get16(in + 4);
  r.recoveryPort = get16(in + 6);
  r.hostHash = get64(in + 8);
  r.pid = int32_t(get32(in + 16));
  r.numa = int32_t(get32(in + 20));
  r.kernel = get32(in + 24);
  r.cpuSet = get32(in + 28);
  r.cpus = get16(in + 32);
  return r;
}

uint64_t hash64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace strata
