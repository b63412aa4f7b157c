#include "transports/shm/store_mode.h"

#include <algorithm>

namespace strata {

bool StoreModeChooser::record(bool streamed, size_t bytes, uint64_t nanos) {
  if (bytes == 0) return false;
  const double perKiB = double(nanos) * 1024.0 / double(bytes);
  double& cost = cost_[streamed ? 1 : 0];
  const double weight = streamed == prefersStreaming_ ? kNewestWeight : kExploredWeight;
  cost = cost == 0 ? perKiB : cost + weight * (std::min(perKiB, kMostOfAverage * cost) - cost);
  if (cost_[0] == 0 || cost_[1] == 0) return false;
  const bool before = prefersStreaming_;
  const double streaming = cost_[1] * kStreamingBias;
  if (!prefersStreaming_ && streaming * kSwitchMargin < cost_[0]) prefersStreaming_ = true;
  else if (prefersStreaming_ && cost_[0] * kSwitchMargin < streaming) prefersStreaming_ = false;
  return prefersStreaming_ != before;
}

}  // namespace strata
