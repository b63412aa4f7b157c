// The shm channel (transports/shm) between two ends in one process: packets
// of every size cross the ring through many wrap-arounds intact, tiny ones in
// the word's cache line, small ones in the small lane and in order with the
// rest, a full ring refuses more, a peer's impossible packet length is
// refused, and a closed peer is reported after its last packet is read.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "bootstrap/socket.h"
#include "core/config.h"
#include "core/error.h"
#include "transports/shm/shm_ring.h"
#include "transports/shm/shm_transport.h"
#include "transports/shm/single_copy.h"
#include "transports/shm/store_mode.h"

namespace strata {
namespace {

constexpr size_t kSlotBytes = 4096;
constexpr int kSlots = 4;
// Asked of acquireSend, room that only a slot has (not a small slot), so
// the packet goes in the slots whatever it then holds.
constexpr size_t kInSlots = kShmSmallSlotBytes + 1;

// The contexts of a link's two ends, rank 0 (which initiates) and rank 1.
std::pair<LinkContext, LinkContext> linkContexts(const Config* config) {
  LinkContext ca, cb;
  ca.rank = cb.peer = 0;
  ca.peer = cb.rank = 1;
  ca.nranks = cb.nranks = 2;
  ca.initiator = true;
  ca.commTag = cb.commTag = 0x5eed;
  ca.config = cb.config = config;
  return {ca, cb};
}

// Both ends of one shm link: a (rank 0) and b (rank 1).
struct ShmPair {
  Config config;
  std::unique_ptr<Channel> a, b;

  // `streaming`: STRATA_SHM_STREAMING (-1: measured).
  explicit ShmPair(size_t singleCopyBytes = 0, int slots = kSlots, size_t slotBytes = kSlotBytes,
                   int streaming = -1, int timeoutMs = 600000) {
    config.timeoutMs = timeoutMs;
    config.shmSingleCopyBytes = singleCopyBytes;
    config.shmStreaming = streaming;
    config.shmSlotBytes = slotBytes;
    config.shmSlots = slots;
    auto [ca, cb] = linkContexts(&config);
    ShmTransport shm;
    SetupBlob blobA, blobB;
    auto pendingA = shm.begin(ca, &blobA);
    auto pendingB = shm.begin(cb, &blobB);
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    livenessOfB = fds[1];
    a = pendingA->finish(Fd(fds[0]), blobB);
    b = pendingB->finish(Fd(fds[1]), blobA);
  }
  int livenessOfB = -1;  // b's end of the liveness line (b owns it)
};

std::vector<uint8_t> receiveOne(Channel& ch) {
  ConstSpan in = ch.peekRecv();
  std::vector<uint8_t> got(in.data, in.data + in.size);
  ch.consumeRecv(in.size);
  return got;
}

// The writer fills the ring each time, so it marks its packets as running
// ahead (kWriterAhead) and the reader fetches each next packet's lines early:
// the lengths and bytes must come through that as well.
TEST(ShmChannel, PacketsOfEverySizeCrossManyWrapArounds) {
  ShmPair link;
  std::mt19937 rng(7);
  std::deque<std::vector<uint8_t>> inFlight;
  size_t sent = 0, received = 0;
  while (received < 2000) {
    // Fill the ring; it takes exactly kSlots packets.
    while (sent < 2000) {
      Span out = link.b->acquireSend(kSlotBytes * 2);
      if (!out.data) break;
      ASSERT_EQ(out.size, kSlotBytes) << "a slot's capacity is the configured slot size";
      size_t n = std::vector<size_t>{0, 1, 7, 40, 63, 64, 65, 1021, kSlotBytes - 1, kSlotBytes}[rng() % 10];
      std::vector<uint8_t> packet(n);
      for (uint8_t& x : packet) x = uint8_t(rng());
      if (n) std::memcpy(out.data, packet.data(), n);  // an empty vector's data() may be null
      link.b->commitSend(n);
      inFlight.push_back(packet);
      ++sent;
    }
    ASSERT_LE(inFlight.size(), size_t(kSlots));
    if (sent < 2000) ASSERT_EQ(inFlight.size(), size_t(kSlots)) << "the ring refused a packet before it was full";
    // Drain part of it, a packet in two pieces now and then.
    size_t take = 1 + rng() % inFlight.size();
    for (size_t i = 0; i < take; ++i) {
      ConstSpan in = link.a->peekRecv();
      ASSERT_TRUE(in.data != nullptr || inFlight.front().empty());
      ASSERT_EQ(in.size, inFlight.front().size()) << "packet " << received;
      size_t first = in.size > 1 && rng() % 2 ? in.size / 2 : in.size;
      std::vector<uint8_t> got(in.data, in.data + first);
      link.a->consumeRecv(first);
      if (first < in.size) {
        ConstSpan rest = link.a->peekRecv();
        ASSERT_EQ(rest.size, in.size - first);
        got.insert(got.end(), rest.data, rest.data + rest.size);
        link.a->consumeRecv(rest.size);
      }
      ASSERT_EQ(got, inFlight.front()) << "packet " << received;
      inFlight.pop_front();
      ++received;
    }
  }
  EXPECT_EQ(link.a->peekRecv().data, nullptr) << "a packet appeared that was never sent";
}

// Packets `from` can send now (each one byte, tagged `tag`), up to `most`,
// asking acquireSend for `room` bytes (kInSlots: in the slots; 1: in the
// small lane).
int sendWhileRoom(Channel& from, uint8_t tag, int most, size_t room = kInSlots) {
  int sent = 0;
  for (; sent < most; ++sent) {
    Span out = from.acquireSend(room);
    if (!out.data) break;
    out.data[0] = tag;
    from.commitSend(1);
  }
  return sent;
}

// A reader releases slots in batches of a quarter of the ring while it goes
// on reading, and everything as soon as it waits: finds its inbox empty,
// finds its own outbox full, or has progress() called (what a waiting rank
// does on every link). So a sender never waits on a release held back.
TEST(ShmChannel, ReleasesAreHeldBackOnlyWhileTheReaderReads) {
  constexpr int kRing = 8;  // releases go in pairs
  ShmPair link(0, kRing);
  ASSERT_EQ(sendWhileRoom(*link.b, 1, 100), kRing);
  receiveOne(*link.a);
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 100), 0) << "one packet read: its release waits for the next";
  receiveOne(*link.a);
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 100), 2) << "two packets read: both released";
  receiveOne(*link.a);
  EXPECT_EQ(sendWhileRoom(*link.b, 3, 100), 0);
  link.a->progress();
  EXPECT_EQ(sendWhileRoom(*link.b, 3, 100), 1) << "progress() released the packet held back";
  receiveOne(*link.a);
  ASSERT_EQ(sendWhileRoom(*link.a, 4, 100), kRing) << "a's own outbox to b is empty";
  EXPECT_EQ(sendWhileRoom(*link.a, 4, 100), 0);  // full: a released b's packet while it looked
  EXPECT_EQ(sendWhileRoom(*link.b, 5, 100), 1) << "a reader whose outbox is full releases what it read";
  // Every packet arrives, in order, once; then an empty inbox releases all.
  std::vector<uint8_t> tags;
  for (ConstSpan in = link.a->peekRecv(); in.data; in = link.a->peekRecv()) {
    ASSERT_EQ(in.size, 1u);
    tags.push_back(in.data[0]);
    link.a->consumeRecv(1);
  }
  EXPECT_EQ(tags, (std::vector<uint8_t>{1, 1, 1, 1, 2, 2, 3, 5}));
  ASSERT_EQ(sendWhileRoom(*link.b, 6, 1), 1);
  EXPECT_EQ(receiveOne(*link.a), std::vector<uint8_t>{6});  // the 13th packet read: held back
  EXPECT_EQ(link.a->peekRecv().data, nullptr);
  EXPECT_EQ(sendWhileRoom(*link.b, 7, 100), kRing) << "a reader that found its inbox empty released everything";
  // A large packet is released as soon as it is read.
  for (int i = 0; i < kRing; ++i) receiveOne(*link.a);
  ASSERT_EQ(link.a->peekRecv().data, nullptr);
  Span big = link.b->acquireSend(kSlotBytes);
  ASSERT_EQ(big.size, kSlotBytes);
  std::memset(big.data, 8, kSlotBytes);
  link.b->commitSend(kSlotBytes);
  EXPECT_EQ(receiveOne(*link.a), std::vector<uint8_t>(kSlotBytes, 8));
  EXPECT_EQ(sendWhileRoom(*link.b, 9, 100), kRing);
}

// Packets that fit a small slot (every tiny call's) go in the small lane
// (shm_ring.h): a writer runs kShmSmallSlots of them ahead of the reader,
// not the ring's few slots, and the reader releases them a quarter of that
// lane at a time while it reads. A packet that needs a slot still waits
// for one of the slots: the lanes share the packets' numbering.
TEST(ShmChannel, SmallPacketsRunALongWayAheadInTheSmallLane) {
  ShmPair link;  // kSlots slots
  ASSERT_EQ(sendWhileRoom(*link.b, 1, 1000, 1), kShmSmallSlots);
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 1000, kShmSmallSlotBytes), 0) << "a full small lane takes no more";
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 1000), 0) << "nor do the slots: the packets in flight fill them too";
  constexpr int kQuarter = kShmSmallSlots / 4;
  for (int i = 0; i < kQuarter - 1; ++i) EXPECT_EQ(receiveOne(*link.a), std::vector<uint8_t>{1});
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 1000, 1), 0) << "releases of small packets go a quarter of the lane at a time";
  EXPECT_EQ(receiveOne(*link.a), std::vector<uint8_t>{1});
  EXPECT_EQ(sendWhileRoom(*link.b, 2, 1000, 1), kQuarter);
  // Drained, with the reader waiting (so releasing everything): the slots
  // take kSlots packets ahead, the small lane its own count.
  int tags1 = 0, tags2 = 0;
  for (ConstSpan in = link.a->peekRecv(); in.data; in = link.a->peekRecv()) {
    ASSERT_EQ(in.size, 1u);
    (in.data[0] == 1 ? tags1 : tags2) += 1;
    ASSERT_TRUE(in.data[0] == 1 || tags1 == kShmSmallSlots - kQuarter) << "out of order";
    link.a->consumeRecv(1);
  }
  EXPECT_EQ(tags1, kShmSmallSlots - kQuarter);
  EXPECT_EQ(tags2, kQuarter);
  EXPECT_EQ(sendWhileRoom(*link.b, 3, 1000), kSlots);
  EXPECT_EQ(sendWhileRoom(*link.b, 4, 1000, 1), kShmSmallSlots - kSlots) << "packets in the slots count in the small lane's window";
}

// Packets of every size, each in whichever lane its size takes (some asked
// for more room than they fill), mixed at random and drained at random,
// arrive in the order sent and intact.
TEST(ShmChannel, PacketsInBothLanesArriveInOrder) {
  ShmPair link(0, kSlots, 3 * kShmSmallSlotBytes);
  std::mt19937 rng(23);
  const std::vector<size_t> sizes{0, 1, 8, 56, 57, 200, 4095, kShmSmallSlotBytes, kShmSmallSlotBytes + 1,
                                  2 * kShmSmallSlotBytes + 5, 3 * kShmSmallSlotBytes};
  std::deque<std::vector<uint8_t>> inFlight;
  size_t sent = 0, received = 0;
  while (received < 5000) {
    for (int burst = int(rng() % 80); burst > 0 && sent < 5000; --burst) {
      const size_t asked = sizes[rng() % sizes.size()];
      const size_t n = asked && rng() % 3 == 0 ? rng() % asked : asked;
      Span out = link.b->acquireSend(asked);
      if (!out.data) break;
      ASSERT_GE(out.size, n);
      std::vector<uint8_t> packet(n);
      for (uint8_t& x : packet) x = uint8_t(rng());
      if (n) std::memcpy(out.data, packet.data(), n);
      link.b->commitSend(n);
      inFlight.push_back(std::move(packet));
      ++sent;
    }
    ASSERT_LE(inFlight.size(), size_t(kShmSmallSlots));
    for (size_t take = inFlight.empty() ? 0 : 1 + rng() % inFlight.size(); take > 0; --take) {
      ConstSpan in = link.a->peekRecv();
      ASSERT_EQ(in.size, inFlight.front().size()) << "packet " << received;
      ASSERT_TRUE(std::equal(in.data, in.data + in.size, inFlight.front().begin())) << "packet " << received;
      link.a->consumeRecv(in.size);
      inFlight.pop_front();
      ++received;
    }
  }
  EXPECT_EQ(link.a->peekRecv().data, nullptr) << "a packet appeared that was never sent";
}

// A packet of up to kShmCompactBytes is one cache line with the slot's word
// (its bytes right after the word); a longer one starts after the 16-byte
// header (its copies keep that alignment). Both kinds, mixed, cross the ring
// intact, each read where its length says, also where the writer asked for
// room for a long packet and wrote a compact one.
TEST(ShmChannel, TinyPacketsShareTheWordsLineAndLongerOnesKeepTheirAlignment) {
  ShmPair link;
  std::mt19937 rng(11);
  const std::vector<size_t> sizes{0, 1, 8, 24, 32, kShmCompactBytes - 1, kShmCompactBytes, kShmCompactBytes + 1,
                                  64, 1021, kSlotBytes};
  auto placed = [](size_t bytes) { return bytes <= kShmCompactBytes ? kShmCompactOffset : kShmSlotHeaderBytes; };
  for (int i = 0; i < 1000; ++i) {
    const size_t asked = sizes[rng() % sizes.size()];
    size_t n = asked;  // sometimes fewer than asked for: one less, or a few bytes
    if (asked && rng() % 4 == 0) n = rng() % 2 ? asked - 1 : rng() % std::min<size_t>(asked, 9);
    Span out = link.b->acquireSend(asked);
    ASSERT_NE(out.data, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data) % 64, placed(asked)) << asked << " bytes asked";
    std::vector<uint8_t> packet(n);
    for (uint8_t& x : packet) x = uint8_t(rng());
    if (n) std::memcpy(out.data, packet.data(), n);
    link.b->commitSend(n);
    ConstSpan in = link.a->peekRecv();
    ASSERT_EQ(in.size, n);
    if (n) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(in.data) % 64, placed(n)) << n << " bytes of " << asked << " asked";
      EXPECT_EQ(std::vector<uint8_t>(in.data, in.data + n), packet) << i;
    }
    link.a->consumeRecv(n);
  }
}

// Large packets are stored cached or streaming as the reader's measurements
// prefer (store_mode.h), and arrive intact either way. Here the reader makes
// one way slow on purpose (it waits before it consumes such a packet): after
// the writer's first exploring run the link stores the other way, and turns
// back when the slowness moves to that way. The slot header says how each
// packet was stored; STRATA_SHM_STREAMING=0 / 1 fix the way.
TEST(ShmChannel, LargePacketsFollowTheReadersMeasurements) {
  constexpr size_t kLarge = 96 * 1024;
  std::mt19937 rng(17);
  std::vector<uint8_t> packet(kLarge);
  auto sendAndReceive = [&](ShmPair& link, bool slowWhenStreamed) {
    const size_t n = kStoreModeMinBytes + rng() % (kLarge - kStoreModeMinBytes + 1);  // odd sizes too
    for (size_t i = 0; i < n; ++i) packet[i] = uint8_t(rng());
    EXPECT_EQ(link.b->trySend(packet.data(), n), n) << "a packet that fits a slot goes in one piece";
    ConstSpan in = link.a->peekRecv();
    EXPECT_EQ(in.size, n);
    EXPECT_TRUE(std::equal(in.data, in.data + n, packet.begin())) << n << " bytes";
    const auto* slot = reinterpret_cast<const ShmSlotHeader*>(in.data - kShmSlotHeaderBytes);
    const bool streamed = (slot->writerNanos & kStreamedPacket) != 0;
    if (streamed == slowWhenStreamed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    link.a->consumeRecv(n);
    return streamed;
  };
  auto streamedOf = [&](ShmPair& link, int packets, bool slowWhenStreamed) {
    std::vector<bool> streamed;
    for (int i = 0; i < packets; ++i) streamed.push_back(sendAndReceive(link, slowWhenStreamed));
    return streamed;
  };
  const int kEvery = int(kStoreModeExploreEvery), kAt = int(kStoreModeExploreAt), kRun = int(kStoreModeExploreRun);
  {
    ShmPair link(0, kSlots, kLarge);
    // Cached is slow: after the first run of streamed packets, streaming.
    std::vector<bool> s = streamedOf(link, kEvery, /*slowWhenStreamed=*/false);
    for (int i = 0; i < kAt; ++i) ASSERT_FALSE(s[i]) << "packet " << i << ": a link starts cached";
    for (int i = kAt; i < kAt + kRun; ++i) ASSERT_TRUE(s[i]) << "packet " << i << ": the exploring run";
    for (int i = kAt + kRun; i < kEvery; ++i) ASSERT_TRUE(s[i]) << "packet " << i << ": streaming measured cheaper";
    // Now streaming is slow: the link goes back to cached, and stays.
    s = streamedOf(link, kEvery, /*slowWhenStreamed=*/true);
    // The averages move a quarter of the way a packet (and an outlier at
    // most doubles one): within a few dozen packets, cached for good.
    for (int i = kEvery / 2; i < kEvery; ++i)
      ASSERT_FALSE(s[i]) << "packet " << kEvery + i << ": cached measured cheaper again, the link went back";
  }
  for (int setting : {0, 1}) {
    ShmPair link(0, kSlots, kLarge, setting);
    std::vector<bool> s = streamedOf(link, kAt + kRun + 8, /*slowWhenStreamed=*/setting == 1);
    EXPECT_EQ(std::count(s.begin(), s.end(), setting == 1), kAt + kRun + 8)
        << "STRATA_SHM_STREAMING=" << setting << " fixes the way, whatever it costs";
  }
}

TEST(ShmChannel, ImpossiblePacketLengthIsRefused) {
  for (size_t room : {kShmCompactBytes + 1, kInSlots}) {  // in the small lane, in the slots
    ShmPair link(0, kSlots, 2 * kSlotBytes);
    Span out = link.b->acquireSend(room);  // a packet that starts after the slot header
    ASSERT_NE(out.data, nullptr);
    // A misbehaving peer publishes packet 0 with a length past its slot.
    const size_t past = room == kInSlots ? 2 * kSlotBytes + 1 : kShmSmallSlotBytes + 1;
    auto* slot = reinterpret_cast<ShmSlotHeader*>(out.data - kShmSlotHeaderBytes);
    slot->word.store(shmSlotWord(0, past), std::memory_order_release);
    try {
      link.a->peekRecv();
      FAIL() << "an impossible packet length was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), strataRemoteError);
      EXPECT_NE(std::strstr(e.what(), (std::to_string(past) + "-byte packet").c_str()), nullptr) << e.what();
    }
  }
}

TEST(ShmChannel, ClosedPeerIsReportedAfterItsLastPacket) {
  ShmPair link;
  Span out = link.b->acquireSend(3);
  std::memcpy(out.data, "end", 3);
  link.b->commitSend(3);
  link.b.reset();  // closes its liveness socket
  link.a->onReadable();  // what the executor's poll does when the socket reads EOF
  std::vector<uint8_t> last = receiveOne(*link.a);
  EXPECT_EQ(std::string(last.begin(), last.end()), "end");
  try {
    link.a->peekRecv();
    FAIL() << "a closed peer with nothing left to read was not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError) << e.what();
  }
}

// Single copy: a packet from the sender's own memory is lent (one slot says
// where it lies), read straight into the receiver's buffer or through the
// receiver's small buffer by peek, and the sender's buffer stays lent until
// the whole packet is consumed. Ends of one process read each other like two.
TEST(ShmChannel, LentPacketsAreReadFromTheSendersMemory) {
  ShmPair link(/*singleCopyBytes=*/1000);
  std::mt19937 rng(11);
  std::vector<uint8_t> big(300 * 1024 + 5), small(999);  // a packet larger than a slot; one below the threshold
  for (uint8_t& x : big) x = uint8_t(rng());
  for (uint8_t& x : small) x = uint8_t(rng());
  EXPECT_FALSE(link.b->sendBuffersLent());
  ASSERT_EQ(link.b->trySendStable(big.data(), big.size(), big.size(), LendSaving::kTwoCopies), big.size()) << "a lent packet is taken whole";
  ASSERT_EQ(link.b->trySendStable(small.data(), small.size(), small.size(), LendSaving::kTwoCopies), small.size())
      << "below the threshold the bytes are copied into the ring";
  ASSERT_EQ(link.b->trySendStable(big.data(), big.size(), big.size(), LendSaving::kOneCopy), big.size())
      << "a threshold set by STRATA_SHM_SINGLE_COPY_BYTES holds where lending saves one copy too";
  EXPECT_TRUE(link.b->sendBuffersLent());
  // Packet 1: straight into place, in two reads.
  std::vector<uint8_t> got(big.size());
  ASSERT_EQ(link.a->tryRecvInto(got.data(), 1000, false), 1000u);
  ASSERT_EQ(link.a->tryRecvInto(got.data() + 1000, got.size(), false), got.size() - 1000);
  EXPECT_EQ(got, big);
  // Packet 2 came through the ring: copied, not lent.
  std::vector<uint8_t> copied = receiveOne(*link.a);
  EXPECT_EQ(copied, small);
  EXPECT_TRUE(link.b->sendBuffersLent()) << "the last lent packet is not read yet";
  // Packet 3: peeked in pieces (a reducing receiver), half then the rest.
  std::vector<uint8_t> peeked;
  while (peeked.size() < big.size()) {
    ConstSpan in = link.a->peekRecv();
    ASSERT_GT(in.size, 0u);
    size_t take = in.size > 1 && peeked.empty() ? in.size / 2 : in.size;
    peeked.insert(peeked.end(), in.data, in.data + take);
    link.a->consumeRecv(take);
  }
  EXPECT_EQ(peeked, big);
  EXPECT_FALSE(link.b->sendBuffersLent()) << "every lent packet was read";
}

// A lending link takes every lendable byte in one region (one slot stands for
// them all, read in pieces); a copying one takes at most the packet asked.
TEST(ShmChannel, ALentRegionTakesEveryLendableByte) {
  ShmPair link(/*singleCopyBytes=*/1000);
  std::mt19937 rng(12);
  std::vector<uint8_t> run(kSlots * 3 * kSlotBytes + 12), small(999);  // more than the ring's slots hold
  for (uint8_t& x : run) x = uint8_t(rng());
  for (uint8_t& x : small) x = uint8_t(rng());
  ASSERT_EQ(link.b->trySendStable(run.data(), kSlotBytes, run.size(), LendSaving::kTwoCopies), run.size())
      << "the whole run in one lent region";
  ASSERT_EQ(link.b->trySendStable(small.data(), 500, small.size(), LendSaving::kTwoCopies), 500u)
      << "below the threshold a packet is copied, no more than asked";
  std::vector<uint8_t> got(run.size());
  for (size_t at = 0; at < got.size();) {
    const size_t n = link.a->tryRecvInto(got.data() + at, std::min<size_t>(kSlotBytes, got.size() - at), false);
    ASSERT_GT(n, 0u);
    at += n;
  }
  EXPECT_EQ(got, run);
  EXPECT_EQ(receiveOne(*link.a), std::vector<uint8_t>(small.begin(), small.begin() + 500));
  EXPECT_FALSE(link.b->sendBuffersLent());
}

// A shared read (shm_ring.h: ShmSharedRead): the receiver reads a lent
// region's chunks from the front while the idle sender, spinning on
// progress() as a waiting rank does, writes chunks from the back straight
// into the receiver's destination. Whoever takes a chunk, every byte lands
// once and right, for regions of one chunk's multiple and odd lengths, and
// the sender's buffer is its own again afterwards.
TEST(ShmChannel, ASharedReadLandsEveryByteWhoeverCopiesIt) {
  ShmPair link(/*singleCopyBytes=*/1000);
  std::mt19937 rng(13);
  std::atomic<bool> stop{false};
  std::atomic<int> helped{0};
  std::thread sender([&] {
    while (!stop.load()) helped += link.b->progress() ? 1 : 0;
  });
  for (size_t bytes : {kSharedReadMinBytes, 2 * kSharedChunkBytes * 8 + 5, (size_t(5) << 20) + 3}) {
    std::vector<uint8_t> src(bytes), got(bytes + 1, 0xee);
    for (uint8_t& x : src) x = uint8_t(rng());
    ASSERT_EQ(link.b->trySendStable(src.data(), bytes, bytes, LendSaving::kOneCopyShared), bytes);
    size_t n = 0;
    while (!(n = link.a->tryRecvShared(got.data(), bytes))) {
    }
    ASSERT_EQ(n, bytes);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), got.begin())) << bytes << " bytes";
    EXPECT_EQ(got[bytes], 0xee) << "a byte past the region was written";
  }
  stop = true;
  sender.join();
  EXPECT_FALSE(link.b->sendBuffersLent()) << "every shared region was released";
  std::printf("[ shared  ] the sender wrote chunks in %d of its progress() calls\n", helped.load());
}

// The sender's side alone, deterministic: a request written into the
// receiver's inbox header as the receiver writes it has the sender write
// every chunk it can take (here all of them) into the named destination; a
// request for a packet it did not lend shareable, or for more chunks than
// its region has, is not served.
TEST(ShmChannel, ASharedReadRequestIsServedOnlyForTheSendersRegion) {
  ShmPair link(/*singleCopyBytes=*/1000);
  std::vector<uint8_t> src(3 * kSharedChunkBytes + 77), dst(src.size(), 0);
  std::mt19937 rng(14);
  for (uint8_t& x : src) x = uint8_t(rng());
  ASSERT_EQ(link.b->trySendStable(src.data(), src.size(), src.size(), LendSaving::kOneCopyShared), src.size());
  // a's inbox header: the segment's start, before the first slot (packet 0's).
  Span next = link.b->acquireSend(kInSlots);  // packet 1's slot
  ASSERT_NE(next.data, nullptr);
  uint8_t* slot0 = next.data - kShmSlotHeaderBytes - shmSlotStride(kSlotBytes);
  auto* header = reinterpret_cast<ShmRingHeader*>(slot0 - kShmHeaderBytes);
  ShmSharedRead& s = header->sharedRead;
  const uint64_t chunks = 4;
  s.packet.store(0);
  s.dst.store(reinterpret_cast<uint64_t>(dst.data()));
  s.written.store(0);
  s.broken.store(0);
  s.cursor.store(sharedCursor(0, 0, chunks + 1));  // one chunk more than the region has
  EXPECT_FALSE(link.b->progress()) << "a request beyond the region was served";
  s.packet.store(1);  // a packet that is not a lent region
  s.cursor.store(sharedCursor(1, 0, chunks));
  EXPECT_FALSE(link.b->progress()) << "a request for another packet was served";
  EXPECT_EQ(dst, std::vector<uint8_t>(dst.size(), 0));
  s.packet.store(0);
  s.cursor.store(sharedCursor(0, 0, chunks));
  EXPECT_TRUE(link.b->progress());
  EXPECT_EQ(s.written.load(), chunks);
  EXPECT_EQ(s.broken.load(), 0u);
  EXPECT_EQ(s.cursor.load(), sharedCursor(0, 0, 0)) << "every chunk taken from the back";
  EXPECT_EQ(dst, src);
  EXPECT_FALSE(link.b->progress()) << "nothing left to take";
  // The receiver's own shared read of it, with no thread serving the
  // sender's side: it takes and reads every chunk itself.
  std::vector<uint8_t> got(src.size());
  s.cursor.store(0);
  ASSERT_EQ(link.a->tryRecvShared(got.data(), got.size() - 1), 0u) << "a destination too small is refused";
  ASSERT_EQ(link.a->tryRecvShared(got.data(), got.size()), got.size());  // alone: no thread serves it
  EXPECT_EQ(got, src);
  EXPECT_FALSE(link.b->sendBuffersLent());
}

// What a receiver's shared read said while a thread, playing the sender,
// took the last chunk as soon as the receiver published the cursor and then
// ran `afterTaking` instead of writing it: the error and how long it took to
// come (tried over up to 10 packets, until the thread wins the race once).
struct HeldChunk {
  bool taken = false;
  strataResult_t code = strataSuccess;
  std::string what;
  double seconds = 0;
};
HeldChunk readWhileAChunkIsHeld(ShmPair& link, const std::function<void()>& afterTaking) {
  std::vector<uint8_t> src(256 * kSharedChunkBytes, 5), got(src.size());
  Span next = link.b->acquireSend(kInSlots);  // packet 0's slot, to find a's inbox header
  EXPECT_NE(next.data, nullptr);
  auto* header = reinterpret_cast<ShmRingHeader*>(next.data - kShmSlotHeaderBytes - kShmHeaderBytes);
  ShmSharedRead& s = header->sharedRead;
  HeldChunk held;
  for (uint64_t packet = 0; packet < 10 && !held.taken; ++packet) {
    EXPECT_EQ(link.b->trySendStable(src.data(), src.size(), src.size(), LendSaving::kOneCopyShared), src.size());
    std::atomic<bool> claimed{false}, spinning{false};
    std::thread sender([&] {
      spinning = true;
      for (;;) {
        uint64_t c = s.cursor.load();
        const uint64_t front = sharedFront(c), end = sharedEnd(c);
        if ((c >> 48) != sharedTag(packet) || end == 0) continue;  // not published yet
        if (front >= end) return;                                 // the receiver took them all
        if (s.cursor.compare_exchange_weak(c, sharedCursor(packet, front, end - 1))) {
          claimed = true;
          afterTaking();
          return;
        }
      }
    });
    while (!spinning) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    try {
      link.a->tryRecvShared(got.data(), got.size());
      sender.join();
      EXPECT_FALSE(claimed) << "a shared read ended without the chunk taken from it";
    } catch (const Error& e) {
      sender.join();
      EXPECT_TRUE(claimed) << e.what();
      held = HeldChunk{true, e.code(), e.what(),
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
    }
  }
  EXPECT_TRUE(held.taken) << "the thread never took a chunk before the receiver took them all";
  return held;
}

// A sender that takes a chunk of a shared read and never writes it (stopped
// in the middle of one) is the receiver's strataRemoteError once the timeout
// has passed, naming it: not a wait without end.
TEST(ShmChannel, AChunkTakenAndNeverWrittenIsAnErrorWithinTheTimeout) {
  ShmPair link(/*singleCopyBytes=*/1000, kSlots, kSlotBytes, -1, /*timeoutMs=*/300);
  const HeldChunk held = readWhileAChunkIsHeld(link, [] {});
  ASSERT_TRUE(held.taken);
  EXPECT_EQ(held.code, strataRemoteError);
  EXPECT_NE(held.what.find("rank 1 took 1 chunks"), std::string::npos) << held.what;
  EXPECT_GE(held.seconds, 0.25) << held.what;
  EXPECT_LT(held.seconds, 5.0) << held.what;
}

// The sender dies holding the chunk (its liveness line closes, as a killed
// process's does): an error naming it at once, not at the timeout (a 2-rank
// broadcast's survivor once waited the whole 60 s when the root was killed
// in that window).
TEST(ShmChannel, ASenderThatDiesHoldingATakenChunkIsAnErrorAtOnce) {
  ShmPair link(/*singleCopyBytes=*/1000, kSlots, kSlotBytes, -1, /*timeoutMs=*/60000);
  const HeldChunk held = readWhileAChunkIsHeld(link, [&] { ::shutdown(link.livenessOfB, SHUT_RDWR); });
  ASSERT_TRUE(held.taken);
  EXPECT_EQ(held.code, strataRemoteError);
  EXPECT_NE(held.what.find("rank 1"), std::string::npos) << held.what;
  EXPECT_LT(held.seconds, 2.0) << held.what;
}

TEST(ShmChannel, ALentRegionThatCannotBeReadIsRefused) {
  ShmPair link(/*singleCopyBytes=*/1);
  std::vector<uint8_t> buffer(4096, 7);
  ASSERT_EQ(link.b->trySendStable(buffer.data(), buffer.size(), buffer.size(), LendSaving::kTwoCopies), buffer.size());
  std::vector<uint8_t> got(buffer.size());
  ASSERT_EQ(link.a->tryRecvInto(got.data(), got.size(), false), got.size());
  EXPECT_EQ(got, buffer);
  // A misbehaving peer lends a region at address 8, which nothing maps:
  // EFAULT, reported as the peer's fault.
  ASSERT_EQ(link.b->trySendStable(buffer.data(), buffer.size(), buffer.size(), LendSaving::kTwoCopies), buffer.size());
  Span next = link.b->acquireSend(kInSlots);  // the next slot's bytes, placed as the region's
  ASSERT_NE(next.data, nullptr);
  auto* lent = reinterpret_cast<ShmLentRegion*>(next.data - shmSlotStride(kSlotBytes));
  lent->address = 8;
  try {
    link.a->tryRecvInto(got.data(), got.size(), false);
    FAIL() << "an unreadable lent region was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError);
    EXPECT_NE(std::strstr(e.what(), "rank 1 lent"), nullptr) << e.what();
  }
}

// The measured thresholds (single_copy.h): packets are lent where one kernel
// copy beats the ring's two user copies, or, where the ring costs only one
// copy's time (an idle sender, a reducing receiver), where it beats one.
TEST(SingleCopyThresholds, FollowTheMeasuredRates) {
  std::string why;
  SingleCopyCosts costs;
  costs.memcpyGBps = 12;
  costs.kernelGBps = 7.5;  // between half a user copy's rate and a whole one's (the Intel VM)
  costs.callUs = 0.5;
  SingleCopyThresholds t = singleCopyThresholdsFor(costs, &why);
  // 0.5 us / (2/12 - 1/7.5 ns per byte) = 15000 bytes: below the 64 KiB floor.
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyMinBytes) << why;
  EXPECT_EQ(t.againstOneCopy, kSingleCopyNever) << why;
  EXPECT_NE(why.find("never in one-way streams"), std::string::npos) << why;
  // Shared by an idle sender (each core half a kernel copy) it beats the one
  // copy: from the shared reads' floor.
  EXPECT_EQ(t.sharedAgainstOneCopy, kSharedReadMinBytes) << why;

  costs.callUs = 5;  // 5 us / (1/30 ns per byte) = 150000 bytes
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_NEAR(double(t.againstTwoCopies), 150000, 1) << why;

  costs.kernelGBps = 24;  // faster than one user copy: both, against one copy from larger packets
  costs.callUs = 2;
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyMinBytes) << why;  // 2 us / (1/8 ns per byte) = 16000 bytes
  EXPECT_EQ(t.againstOneCopy, kSingleCopyMinBytes) << why;  // 2 us / (1/24 ns per byte) = 48000 bytes
  costs.callUs = 20;
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_NEAR(double(t.againstOneCopy), 480000, 1) << why;
  EXPECT_NEAR(double(t.againstTwoCopies), 160000, 1) << why;
  costs.callUs = 50;  // 50 us / (2/12 - 1/24 ns per byte) = 400000 bytes
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_NEAR(double(t.sharedAgainstOneCopy), 400000, 1) << why;

  costs.kernelGBps = 5;  // slower than two user copies: never
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyNever);
  EXPECT_EQ(t.againstOneCopy, kSingleCopyNever);
  EXPECT_EQ(t.sharedAgainstOneCopy, kSingleCopyNever);
  EXPECT_EQ(why.rfind("off: ", 0), 0u) << why;

  costs.failure = "process_vm_readv refused: Operation not permitted";
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyNever);
  EXPECT_EQ(t.againstTwoCopiesStreamed, kSingleCopyNever);
  EXPECT_NE(why.find("Operation not permitted"), std::string::npos) << why;
}

// Into outputs beyond the cache the two copies are weighed by the rates
// measured out of the cache: the kernel's copy against the ring's pair (the
// Xeon VM: 3.7 against 7.0 GB/s, so never there, while in the cache the
// kernel's copy wins from the floor); as in the cache where those rates were
// not measured.
TEST(SingleCopyThresholds, OutputsBeyondTheCacheFollowTheColdRates) {
  std::string why;
  SingleCopyCosts costs;
  costs.memcpyGBps = 8.1;
  costs.kernelGBps = 5.0;
  costs.callUs = 0.7;
  SingleCopyThresholds t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyMinBytes) << why;
  EXPECT_EQ(t.againstTwoCopiesStreamed, t.againstTwoCopies) << "not measured cold: as in the cache";

  costs.kernelColdGBps = 3.7;
  costs.ringColdGBps = 7.0;
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyMinBytes) << why;
  EXPECT_EQ(t.againstTwoCopiesStreamed, kSingleCopyNever) << why;
  EXPECT_NE(why.find("never into outputs beyond the cache"), std::string::npos) << why;
  EXPECT_NE(why.find("out of the cache process_vm_readv 3.7 GB/s, the ring's two copies 7.0 GB/s"),
            std::string::npos) << why;

  costs.kernelColdGBps = 8;  // 0.7 us / (1/4 - 1/8 ns per byte) = 5600 bytes: the floor
  costs.ringColdGBps = 4;
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopiesStreamed, kSingleCopyMinBytes) << why;
  costs.callUs = 20;  // 20 us / (1/8 ns per byte) = 160000 bytes
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_NEAR(double(t.againstTwoCopiesStreamed), 160000, 1) << why;

  // Slower than two copies in the cache but faster out of it: not "off".
  costs.kernelGBps = 3;
  t = singleCopyThresholdsFor(costs, &why);
  EXPECT_EQ(t.againstTwoCopies, kSingleCopyNever) << why;
  EXPECT_NEAR(double(t.againstTwoCopiesStreamed), 160000, 1) << why;
  EXPECT_NE(why.rfind("off: ", 0), 0u) << why;
}

// A peer's set-up message carries its inbox, pid, address and measured copy
// rates (single_copy.h); one of the wrong length, or with a rate that is
// negative, NaN or absurd, is refused with a sentence naming the rank
// before anything uses it.
TEST(ShmChannel, AGarbledSetUpMessageIsRefused) {
  Config config;
  auto [ca, cb] = linkContexts(&config);
  ShmTransport shm;
  SetupBlob blobA, blobB;
  auto pendingA = shm.begin(ca, &blobA);
  auto pendingB = shm.begin(cb, &blobB);  // its inbox is unlinked when pendingB goes
  ASSERT_GT(blobB.size(), 40u);
  double measuredKernelRate, measuredColdRate;  // the second of the five rates, 32 bytes from the end; the last
  std::memcpy(&measuredKernelRate, blobB.data() + blobB.size() - 32, 8);
  std::memcpy(&measuredColdRate, blobB.data() + blobB.size() - 8, 8);
  EXPECT_GT(measuredKernelRate, 0) << "the measured rates travel in the set-up message";
  EXPECT_GT(measuredColdRate, 0) << "the rates measured out of the cache travel too";

  std::vector<SetupBlob> bad{SetupBlob(blobB.begin(), blobB.end() - 40),  // without the rates
                             SetupBlob(blobB.begin(), blobB.end() - 16)};  // without the cold ones
  SetupBlob longer = blobB;
  longer.push_back(0);
  bad.push_back(longer);
  for (double rate : {-1.0, std::nan(""), 1e300})
    for (size_t fromEnd : {8, 32}) {
      SetupBlob garbled = blobB;
      std::memcpy(garbled.data() + garbled.size() - fromEnd, &rate, 8);
      bad.push_back(garbled);
    }
  for (const SetupBlob& blob : bad) {
    try {
      pendingA->finish(Fd(), blob);
      ADD_FAILURE() << "a garbled " << blob.size() << "-byte set-up message was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), strataRemoteError);
      EXPECT_NE(std::string(e.what()).find("rank 1 sent an invalid shared-memory set-up"), std::string::npos)
          << e.what();
    }
  }
}

// Two processes' measurements that straddle the break-even (the Intel VM,
// one launch: 5.9 against 10.1 GB/s, and 4.4 against 12.2) would have one
// side lend and the other keep the ring; both sides decide from their mean,
// whichever computes it. A side that measured nothing, or was refused,
// leaves the other's figures.
TEST(SingleCopyThresholds, BothSidesOfALinkDecideFromTheSameCosts) {
  SingleCopyCosts a, b;
  a.memcpyGBps = 10.1, a.kernelGBps = 5.9, a.callUs = 0.9, a.kernelColdGBps = 3.5, a.ringColdGBps = 6.5;
  b.memcpyGBps = 12.2, b.kernelGBps = 4.4, b.callUs = 0.5, b.kernelColdGBps = 4.5, b.ringColdGBps = 7.5;
  std::string whyA, whyB;
  ASSERT_EQ(singleCopyThresholdsFor(a, &whyA).againstTwoCopies, kSingleCopyMinBytes) << whyA;
  ASSERT_EQ(singleCopyThresholdsFor(b, &whyB).againstTwoCopies, kSingleCopyNever) << whyB;

  const SingleCopyCosts ab = agreedSingleCopyCosts(a, b), ba = agreedSingleCopyCosts(b, a);
  EXPECT_EQ(ab.memcpyGBps, ba.memcpyGBps);
  EXPECT_EQ(ab.kernelGBps, ba.kernelGBps);
  EXPECT_EQ(ab.callUs, ba.callUs);
  EXPECT_DOUBLE_EQ(ab.memcpyGBps, 11.15);
  EXPECT_DOUBLE_EQ(ab.kernelGBps, 5.15);
  EXPECT_DOUBLE_EQ(ab.callUs, 0.7);
  EXPECT_EQ(ab.kernelColdGBps, ba.kernelColdGBps);
  EXPECT_EQ(ab.ringColdGBps, ba.ringColdGBps);
  EXPECT_DOUBLE_EQ(ab.kernelColdGBps, 4.0);
  EXPECT_DOUBLE_EQ(ab.ringColdGBps, 7.0);
  const SingleCopyThresholds tab = singleCopyThresholdsFor(ab, &whyA), tba = singleCopyThresholdsFor(ba, &whyB);
  EXPECT_EQ(tab.againstTwoCopies, tba.againstTwoCopies);
  EXPECT_EQ(tab.againstOneCopy, tba.againstOneCopy);
  EXPECT_EQ(tab.sharedAgainstOneCopy, tba.sharedAgainstOneCopy);
  EXPECT_EQ(tab.againstTwoCopiesStreamed, tba.againstTwoCopiesStreamed);
  EXPECT_EQ(whyA, whyB);
  // 2 / 11.15 < 1 / 5.15 ns per byte: the ring's two copies are faster.
  EXPECT_EQ(tab.againstTwoCopies, kSingleCopyNever) << whyA;

  SingleCopyCosts unmeasured, refused;
  refused.failure = "process_vm_readv refused: Operation not permitted";
  for (const SingleCopyCosts& other : {unmeasured, refused}) {
    EXPECT_EQ(agreedSingleCopyCosts(a, other).kernelGBps, a.kernelGBps);
    EXPECT_EQ(agreedSingleCopyCosts(other, a).kernelGBps, a.kernelGBps);
    EXPECT_EQ(agreedSingleCopyCosts(other, a).memcpyGBps, a.memcpyGBps);
  }
  EXPECT_FALSE(agreedSingleCopyCosts(refused, unmeasured).failure.empty());
  // Cold rates from one side only: neither side uses them.
  SingleCopyCosts warmOnly = b;
  warmOnly.kernelColdGBps = warmOnly.ringColdGBps = 0;
  EXPECT_EQ(agreedSingleCopyCosts(a, warmOnly).kernelColdGBps, 0);
  EXPECT_EQ(agreedSingleCopyCosts(warmOnly, a).ringColdGBps, 0);
}

}  // namespace
}  // namespace strata
