#include "transports/shm/lend_choice.h"

#include <algorithm>

namespace strata {

namespace {

// `average` moved by `weight` toward this packet's cost per KiB (counted at
// most `most` times the average); the first packet sets it.
void addPacket(double& average, size_t bytes, uint64_t nanos, double weight, double most) {
  const double perKiB = double(nanos) * 1024.0 / double(bytes);
  average = average == 0 ? perKiB : average + weight * (std::min(perKiB, most * average) - average);
}

}  // namespace

bool LendChooser::recordRing(size_t bytes, uint64_t nanos) {
  if (bytes == 0) return false;
  addPacket(ring_, bytes, nanos, prefersLending_ ? kExploredWeight : kNewestWeight, kMostOfAverage);
  if (ringPackets_ < kWarmUpPackets) ++ringPackets_;
  return decide();
}

bool LendChooser::recordLent(size_t bytes, uint64_t nanos) {
  if (bytes == 0) return false;
  addPacket(kernel_, bytes, nanos, prefersLending_ ? kNewestWeight : kExploredWeight, kMostOfAverage);
  return decide();
}

bool LendChooser::decide() {
  if (ringPackets_ < kWarmUpPackets || kernel_ == 0) return false;
  const bool before = prefersLending_;
  if (!prefersLending_ && ring_ > kernel_ * kLendAbove) prefersLending_ = true;
  else if (prefersLending_ && ring_ * kSwitchMargin < kernel_ * kLendAbove) prefersLending_ = false;
  return prefersLending_ != before;
}

}  // namespace strata
