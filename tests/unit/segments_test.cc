// Segments::locate against a linear scan of the pieces, for lookups that walk
// forwards (as plans do, served by the last piece's hint), backwards and at
// random, over pieces of odd sizes (1 byte to a few KiB), some contiguous in
// memory (merged into one piece by append).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/error.h"
#include "exec/segments.h"

namespace strata {
namespace {

struct Piece {
  uint8_t* ptr;
  size_t bytes;
};

uint8_t* expected(const std::vector<Piece>& pieces, size_t at, size_t* run) {
  for (const Piece& p : pieces) {
    if (at < p.bytes) {
      *run = p.bytes - at;
      return p.ptr + at;
    }
    at -= p.bytes;
  }
  return nullptr;
}

TEST(Segments, EveryLookupFindsTheByteALinearScanFinds) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> memory(1 << 20);
  for (int trial = 0; trial < 20; ++trial) {
    Segments seg;
    std::vector<Piece> pieces;  // as appended (a contiguous one is part of the previous)
    size_t pos = 0;
    for (int i = 0; i < 200; ++i) {
      size_t bytes = 1 + rng() % 3000;
      if (rng() % 4 != 0) pos += 1 + rng() % 64;  // a gap: a new piece; else it continues the last
      if (pos + bytes > memory.size()) break;
      seg.append(memory.data() + pos, bytes);
      if (!pieces.empty() && pieces.back().ptr + pieces.back().bytes == memory.data() + pos)
        pieces.back().bytes += bytes;
      else
        pieces.push_back({memory.data() + pos, bytes});
      pos += bytes;
    }
    EXPECT_EQ(seg.pieces(), pieces.size());
    std::vector<size_t> order;
    for (size_t at = 0; at < seg.bytes(); at += 1 + rng() % 97) order.push_back(at);  // forwards
    for (size_t k = order.size(); k-- > 0;) order.push_back(order[k]);               // backwards
    for (int k = 0; k < 500; ++k) order.push_back(rng() % seg.bytes());               // at random
    order.push_back(seg.bytes() - 1);
    order.push_back(0);
    for (size_t at : order) {
      size_t run = 0, want = 0;
      uint8_t* got = seg.locate(at, &run);
      uint8_t* ref = expected(pieces, at, &want);
      ASSERT_EQ(got, ref) << "offset " << at << " of " << seg.bytes();
      ASSERT_EQ(run, want) << "offset " << at;
    }
    EXPECT_THROW(seg.locate(seg.bytes(), nullptr), Error);
  }
}

// An empty range, and one emptied by clear(), refuse every offset; a range
// filled again after clear() is found afresh (no piece left from before).
TEST(Segments, EmptyAndClearedRangesRefuseEveryOffset) {
  std::vector<uint8_t> a(100), b(50);
  Segments seg;
  size_t run = 0;
  EXPECT_EQ(seg.bytes(), 0u);
  EXPECT_THROW(seg.locate(0, &run), Error);
  seg.append(a.data(), 100);
  seg.append(b.data(), 50);
  EXPECT_EQ(seg.locate(120, &run), b.data() + 20);
  seg.clear();
  EXPECT_EQ(seg.bytes(), 0u);
  EXPECT_EQ(seg.pieces(), 0u);
  EXPECT_THROW(seg.locate(0, &run), Error);
  seg.append(b.data() + 10, 7);
  EXPECT_EQ(seg.locate(6, &run), b.data() + 16);
  EXPECT_EQ(run, 1u);
  EXPECT_THROW(seg.locate(7, &run), Error);
}

}  // namespace
}  // namespace strata
