// How a device-buffer operation runs on host staging memory: a piece of it (a
// chunk of its count, or all of it) is copied from the device into a pinned
// host area laid out as the host collective's in-place layout, the host
// collective runs there, and its result is copied back. Device buffers are
// rows of `count` elements (one row, or one per rank for reduce-scatter's
// input, all-gather's output and all-to-all's both), so a chunk [offset,
// offset + elements) of each row is one 2D copy each way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/request.h"

namespace strata {

// One 2D copy: `rows` rows of rowBytes, rows dstPitch / srcPitch bytes apart.
struct RowCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t rowBytes = 0, rows = 0, dstPitch = 0, srcPitch = 0;
};

// A piece of a device request placed in a staging area.
struct StagedPiece {
  Request host;     // the same operation on the staging area (host pointers)
  RowCopy copyIn;   // device -> staging (rows == 0: nothing to copy)
  RowCopy copyOut;  // staging -> device (rows == 0: nothing to copy)
};

// Where the request runs: its communicator's size and this rank.
struct WorldPlace {
  int nranks = 1, rank = 0;
};

// Staging rows per element of the count dimension (1 for most collectives,
// nranks for reduce-scatter and all-gather, 2 x nranks for all-to-all).
size_t stagingRowsPerElement(const Request& r, WorldPlace at);
// Bytes of staging for a piece of `elements` elements (64-byte multiple).
size_t stagingBytes(const Request& r, WorldPlace at, size_t elements);
// Places elements [offset, offset + elements) of validated device request `r`
// at `area` (stagingBytes(r, at, elements) long).
StagedPiece stagePiece(const Request& r, WorldPlace at, size_t offset, size_t elements, uint8_t* area);

}  // namespace strata
