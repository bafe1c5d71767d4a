#include "sparktf/feed/ring.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "sparktf/feed/batch.h"
#include "sparktf/feed/buffer_pool.h"

namespace sparktf::feed {
namespace {

using namespace std::chrono_literals;

std::string UniqueName(const char* tag) {
  static int n = 0;
  return "/sparktf-test-" + std::string(tag) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(n++);
}

bool SegmentExists(const std::string& name) { return ::access(("/dev/shm" + name).c_str(), F_OK) == 0; }

TEST(RingTest, PushPopInOrderAcrossWraparound) {
  const std::string name = UniqueName("wrap");
  auto ring = Ring::Create(name, 4096);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  auto producer = Ring::Attach(name);
  ASSERT_TRUE(producer.ok());
  std::mt19937 rng(1);
  std::string got;
  for (int i = 0; i < 2000; ++i) {
    std::string msg(rng() % 1350, static_cast<char>('a' + i % 26));
    msg += std::to_string(i);
    ASSERT_TRUE((*producer)->Push(msg, 1s).ok());
    ASSERT_TRUE((*ring)->Pop(&got, 1s).ok());
    ASSERT_EQ(got, msg);
  }
  EXPECT_EQ((*ring)->stats().messages_popped, 2000u);
  ring->reset();
  EXPECT_FALSE(SegmentExists(name));  // the owner unlinks on close
}

// This process's mappings of segment `name`, and their resident kB.
std::pair<int, long> Mappings(const std::string& name) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  int count = 0;
  long rss = 0;
  bool in = false;
  while (std::getline(smaps, line)) {
    if (line.find("/dev/shm" + name) != std::string::npos) {
      ++count;
      in = true;
    } else if (line.rfind("Rss:", 0) == 0) {
      if (in) rss += std::stol(line.substr(4));
      in = false;
    }
  }
  return {count, rss};
}

TEST(RingTest, ProducerMappingsAreKeptBetweenAttachesAndFreedWithTheRing) {
  const std::string name = UniqueName("keep");
  auto ring = std::move(Ring::Create(name, 1 << 20)).ValueOrDie();
  const std::string msg(100000, 'k');
  std::string got;
  for (int partition = 0; partition < 3; ++partition) {
    auto producer = std::move(Ring::Attach(name, Ring::AttachFor::kBulk)).ValueOrDie();
    ASSERT_TRUE(producer->Push(msg, 1s).ok());
    ASSERT_TRUE(ring->Pop(&got, 1s).ok());
    ASSERT_EQ(got, msg);
    producer.reset();
    // The consumer's mapping and the kept one of the producer, populated.
    EXPECT_EQ(Mappings(name).first, 2) << partition;
  }
  EXPECT_GT(Mappings(name).second, 1000);
  ring.reset();  // unlinks the segment and frees its data pages
  EXPECT_EQ(Mappings(name).first, 1);
  EXPECT_LT(Mappings(name).second, 64);  // the header's pages at most
  // The next attach (to any ring) drops the mapping of the unlinked one.
  const std::string other = UniqueName("keep-other");
  auto ring2 = std::move(Ring::Create(other, 4096)).ValueOrDie();
  auto producer2 = std::move(Ring::Attach(other, Ring::AttachFor::kBulk)).ValueOrDie();
  EXPECT_EQ(Mappings(name).first, 0);
  // A producer whose ring was closed meanwhile fails cleanly, without
  // touching the freed data pages.
  ring2.reset();
  EXPECT_EQ(producer2->Push("late", 1s).code(), StatusCode::kAborted);
}

TEST(RingTest, TimeoutsCloseAndLimits) {
  const std::string name = UniqueName("limits");
  auto ring = std::move(Ring::Create(name, 4096)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  std::string out;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ring->Pop(&out, 200ms).code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(producer->Push(std::string(3000, 'x'), 1s).code(), StatusCode::kInvalidArgument);
  // Fill it, then a push times out with a message that names the consumer.
  Status st;
  for (int i = 0; i < 100 && st.ok(); ++i) st = producer->Push(std::string(1000, 'y'), 100ms);
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(st.message().find("is not reading"), std::string::npos);
  producer->CloseInput();
  int n = 0;
  while (ring->Pop(&out, 1s).ok()) ++n;
  EXPECT_GT(n, 0);
  EXPECT_EQ(ring->Pop(&out, 1s).code(), StatusCode::kOutOfRange);
  ring->CloseConsumer("training finished");
  st = producer->Push("late", 1s);
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("training finished"), std::string::npos);
  EXPECT_EQ(Ring::Attach("/sparktf-test-no-such-ring").status().code(), StatusCode::kNotFound);
}

TEST(RingTest, SeveralProducerProcessesKeepTheirOrder) {
  const std::string name = UniqueName("multi");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  constexpr int kProducers = 4, kEach = 500;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProducers; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      auto prod = Ring::Attach(name);
      if (!prod.ok()) ::_exit(2);
      for (int i = 0; i < kEach; ++i) {
        if (!(*prod)->Push(std::to_string(p) + ":" + std::to_string(i), 10s).ok()) ::_exit(3);
      }
      prod->reset();
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  std::vector<int> next(kProducers, 0);
  std::string msg;
  for (int k = 0; k < kProducers * kEach; ++k) {
    ASSERT_TRUE(ring->Pop(&msg, 10s).ok()) << k;
    int p = std::stoi(msg.substr(0, msg.find(':')));
    int i = std::stoi(msg.substr(msg.find(':') + 1));
    ASSERT_EQ(i, next[p]++) << "producer " << p << " out of order";
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(RingTest, KilledProducerIsNoticedByTheConsumer) {
  const std::string name = UniqueName("deadprod");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  pid_t pid = ::fork();
  if (pid == 0) {
    auto prod = Ring::Attach(name);
    if (prod.ok()) (void)(*prod)->Push("first", 1s);
    ::pause();
    ::_exit(0);
  }
  std::string msg;
  ASSERT_TRUE(ring->Pop(&msg, 10s).ok());
  EXPECT_EQ(msg, "first");
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  auto t0 = std::chrono::steady_clock::now();
  Status st = ring->Pop(&msg, 10s);
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("died while feeding"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ring.reset();
  EXPECT_FALSE(SegmentExists(name));
}

TEST(RingTest, ReservedSpaceIsReadInReservationOrderOnceCommitted) {
  const std::string name = UniqueName("reserve");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  auto a = std::move(Ring::Attach(name)).ValueOrDie();
  auto b = std::move(Ring::Attach(name)).ValueOrDie();
  EXPECT_EQ(ring->Reserve(8, 1s).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->Reserve(30000, 1s).status().code(), StatusCode::kInvalidArgument);
  auto first = std::move(a->Reserve(5, 1s)).ValueOrDie();
  ASSERT_EQ(first.bytes().size(), 5u);
  ASSERT_TRUE(b->Push("second", 1s).ok());  // pushed while the first is being written
  b->CloseInput();
  std::string got;
  // The reader waits for the first rather than skip it, closed input or not.
  EXPECT_EQ(ring->Pop(&got, 300ms).code(), StatusCode::kDeadlineExceeded);
  std::memcpy(first.bytes().data(), "first", 5);
  ASSERT_TRUE(first.Commit().ok());
  EXPECT_EQ(first.Commit().code(), StatusCode::kInternal);
  ASSERT_TRUE(ring->Pop(&got, 1s).ok());
  EXPECT_EQ(got, "first");
  ASSERT_TRUE(ring->Pop(&got, 1s).ok());
  EXPECT_EQ(got, "second");
  EXPECT_EQ(ring->Pop(&got, 1s).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ring->stats().messages_pushed, 2u);
}

TEST(RingTest, AbandonedSpaceIsSkippedAndReturnsToProducers) {
  const std::string name = UniqueName("abandon");
  auto ring = std::move(Ring::Create(name, 4096)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  std::string got;
  // Many times round the ring: abandoned space must come back, or pushes would block.
  for (int i = 0; i < 200; ++i) {
    {
      auto dropped = std::move(producer->Reserve(700, 1s)).ValueOrDie();
      std::memset(dropped.bytes().data(), 'x', 700);
      if (i % 2) dropped.Abandon();  // else its destructor gives it up
    }
    auto moved = std::move(producer->Reserve(3, 1s)).ValueOrDie();
    RingReservation kept = std::move(moved);
    std::memcpy(kept.bytes().data(), "abc", 3);
    ASSERT_TRUE(kept.Commit().ok());
    moved.Abandon();  // moved from: nothing to give up
    ASSERT_TRUE(producer->Push(std::to_string(i), 1s).ok()) << i;
    ASSERT_TRUE(ring->Pop(&got, 1s).ok());
    ASSERT_EQ(got, "abc");
    ASSERT_TRUE(ring->Pop(&got, 1s).ok());
    ASSERT_EQ(got, std::to_string(i));
  }
  // Space reserved before the consumer closes: committing it says so.
  auto open = std::move(producer->Reserve(3, 1s)).ValueOrDie();
  ring->CloseConsumer("done");
  Status st = open.Commit();
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("done"), std::string::npos);
  EXPECT_EQ(producer->Reserve(3, 1s).status().code(), StatusCode::kAborted);
}

TEST(RingTest, AProducerKilledWhileWritingReservedSpaceIsSkipped) {
  const std::string name = UniqueName("deadwriter");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto prod = Ring::Attach(name);
    if (!prod.ok()) ::_exit(2);
    auto space = (*prod)->Reserve(100, 1s);
    if (!space.ok()) ::_exit(3);
    (void)!::write(ready[1], "r", 1);
    ::pause();  // killed while "writing"
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  auto other = std::move(Ring::Attach(name)).ValueOrDie();
  ASSERT_TRUE(other->Push("after", 1s).ok());
  std::string got;
  EXPECT_EQ(ring->Pop(&got, 300ms).code(), StatusCode::kDeadlineExceeded);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(ring->Pop(&got, 2s).ok());  // the dead writer's space skipped
  EXPECT_EQ(got, "after");
  Status st = ring->Pop(&got, 2s);  // and its death reported
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("died while feeding"), std::string::npos);
  ASSERT_TRUE(other->Push("still", 1s).ok());
  ASSERT_TRUE(ring->Pop(&got, 2s).ok());
  EXPECT_EQ(got, "still");
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace

struct RingTestPeer {
  static Status Lock(const Ring& ring) { return ring.Lock(); }
};

namespace {

TEST(RingTest, AProducerKilledWhileHoldingTheLockDoesNotWedgeTheRing) {
  const std::string name = UniqueName("deadlock");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  int locked[2];
  ASSERT_EQ(::pipe(locked), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto prod = Ring::Attach(name);
    char c = prod.ok() && RingTestPeer::Lock(**prod).ok() ? 1 : 0;
    (void)!::write(locked[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(locked[0], &c, 1), 1);
  ASSERT_EQ(c, 1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // The next taker of the lock recovers it: the consumer learns of the dead producer
  // within the liveness slices, instead of waiting forever on the lock.
  std::string msg;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = ring->Pop(&msg, 10s);
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("died while feeding"), std::string::npos) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(ring->ConsumerStatus().ok());  // the lock is usable again
}

TEST(RingTest, KilledConsumerIsNoticedAndItsSegmentRemoved) {
  const std::string name = UniqueName("deadcons");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto ring = Ring::Create(name, 4096);
    char c = ring.ok() ? 1 : 0;
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 1);
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  Status st;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100 && st.ok(); ++i) st = producer->Push(std::string(1000, 'z'), 10s);
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("consumer (pid"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_FALSE(SegmentExists(name));
}

TEST(RingTest, SweepRemovesSegmentsOfDeadConsumers) {
  const std::string prefix = "/sparktf-test-sweep-" + std::to_string(::getpid());
  pid_t pid = ::fork();
  if (pid == 0) {
    auto ring = Ring::Create(prefix + "-a", 4096);
    ::kill(::getpid(), SIGKILL);  // dies without cleaning up
  }
  ::waitpid(pid, nullptr, 0);
  auto live = std::move(Ring::Create(prefix + "-b", 4096)).ValueOrDie();
  EXPECT_TRUE(SegmentExists(prefix + "-a"));
  auto removed = SweepStaleRings(prefix);
  EXPECT_EQ(removed, std::vector<std::string>{prefix + "-a"});
  EXPECT_TRUE(SegmentExists(prefix + "-b"));  // its consumer (this process) lives
}

TEST(BatchTest, RoundTripAndMalformedInput) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> y = {7, 8};
  std::string bytes_payload;
  const uint64_t offsets[] = {0, 2, 5};
  bytes_payload.append(reinterpret_cast<const char*>(offsets), sizeof(offsets));
  bytes_payload += "abcde";
  std::vector<ColumnView> cols = {
      {"x", ColumnType::kFloat32, {2, 3}, {reinterpret_cast<const char*>(x.data()), 24}},
      {"label", ColumnType::kInt64, {2}, {reinterpret_cast<const char*>(y.data()), 16}},
      {"s", ColumnType::kBytes, {2}, bytes_payload},
  };
  std::string buf;
  ASSERT_TRUE(EncodeBatch(cols, 2, &buf).ok());
  EXPECT_EQ(buf.size(), EncodedBatchSize(cols));
  uint64_t rows = 0;
  std::vector<ColumnView> back;
  ASSERT_TRUE(DecodeBatch(buf, &rows, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(rows, 2u);
  EXPECT_EQ(back[0].name, "x");
  EXPECT_EQ(back[0].dims, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(back[0].data, cols[0].data);
  EXPECT_EQ(back[2].data, bytes_payload);
  // Headers end at 120; payloads start at multiples of 64 from the batch's start.
  EXPECT_EQ(back[0].data.data() - buf.data(), 128);
  EXPECT_EQ(back[1].data.data() - buf.data(), 192);
  EXPECT_EQ(back[2].data.data() - buf.data(), 256);
  EXPECT_EQ(buf.size(), 256u + 64);
  for (size_t n = 0; n < buf.size(); ++n) {  // every truncation
    EXPECT_EQ(DecodeBatch(buf.substr(0, n), &rows, &back).code(), StatusCode::kInvalidArgument)
        << n;
  }
  std::string bad = buf;
  bad[0] ^= 1;
  EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok());
  // Found by batch_fuzz: a nonzero reserved field (and nonzero padding) decoded
  // but did not re-encode to the same bytes; both are now rejected.
  bad = buf;
  bad[16 + 4] = 8;  // first column's reserved u32
  EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok());
  bad = buf;
  bad[16 + 16 + 16 + 1] = 1;  // a padding byte after the first column's name
  EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok());
  for (size_t at : {size_t{120}, size_t{127}, size_t{128 + 24}, size_t{191}, size_t{319}}) {
    bad = buf;  // padding before the payloads, after one and at the very end
    bad[at] = 1;
    EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok()) << at;
  }
  // The row-arrays flag: on a column with per-row dims it decodes (and
  // re-encodes to the same bytes); on a column of scalars it is refused.
  EXPECT_FALSE(back[0].row_arrays);
  std::string flagged = buf;
  flagged[16 + 4] = 1;
  ASSERT_TRUE(DecodeBatch(flagged, &rows, &back).ok());
  EXPECT_TRUE(back[0].row_arrays);
  EXPECT_FALSE(back[1].row_arrays);
  std::string again;
  ASSERT_TRUE(EncodeBatch(back, rows, &again).ok());
  EXPECT_EQ(again, flagged);
  bad = buf;
  bad[16 + 40 + 4] = 1;  // the second column ("label", one value per row)
  EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok());
  // The text flag: on the bytes column it decodes; on a column of numbers not.
  flagged = buf;
  flagged[16 + 40 + 32 + 4] = 2;  // the third column, "s"
  ASSERT_TRUE(DecodeBatch(flagged, &rows, &back).ok());
  EXPECT_TRUE(back[2].text);
  EXPECT_FALSE(back[0].text);
  again.clear();  // EncodeBatch appends
  ASSERT_TRUE(EncodeBatch(back, rows, &again).ok());
  EXPECT_EQ(again, flagged);
  bad = buf;
  bad[16 + 4] = 2;
  EXPECT_FALSE(DecodeBatch(bad, &rows, &back).ok());
  cols[1].dims = {3};  // wrong row count
  EXPECT_FALSE(EncodeBatch(cols, 2, &buf).ok());
}

TEST(BatchTest, PartsPushedIntoARingPopAsTheEncodedBatch) {
  const std::vector<float> x = {1, 2, 3};  // 12 bytes: padded
  const std::vector<uint8_t> flag = {1, 0, 1};  // 3 bytes: padded
  const std::vector<ColumnView> cols = {
      {"x", ColumnType::kFloat32, {3}, {reinterpret_cast<const char*>(x.data()), 12}},
      {"flag", ColumnType::kUInt8, {3}, {reinterpret_cast<const char*>(flag.data()), 3}},
  };
  std::string whole;
  ASSERT_TRUE(EncodeBatch(cols, 3, &whole).ok());
  BatchParts parts;
  ASSERT_TRUE(EncodeBatchParts(cols, 3, &parts).ok());
  ASSERT_EQ(parts.parts.size(), 5u);  // header, x, its padding, flag, its padding
  EXPECT_EQ(parts.parts[1].data(), cols[0].data.data());  // the payloads are not copied
  const std::string name = UniqueName("parts");
  auto ring = std::move(Ring::Create(name, 4096)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  std::string got;
  for (int i = 0; i < 40; ++i) {  // across the wraparound
    ASSERT_TRUE(producer->Push(parts.parts, 1s).ok());
    ASSERT_TRUE(ring->Pop(&got, 1s).ok());
    ASSERT_EQ(got, whole);
  }
  const std::vector<std::string_view> too_big(3, std::string_view(whole.data(), 1000));
  EXPECT_EQ(producer->Push(too_big, 1s).code(), StatusCode::kInvalidArgument);
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % Ring::kPopAlign == 0; }

size_t AfterTag(std::string_view m) { return m.size() >= 32 && m[0] == 'T' ? 32 : 0; }

TEST(RingTest, HeldMessagesLieAlignedInTheRingItself) {
  const std::string name = UniqueName("held");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  BufferPool pool;
  std::mt19937 rng(2);
  for (int i = 0; i < 500; ++i) {  // many times across the wraparound
    const bool tagged = i % 2 == 1;
    std::string msg(8 * (rng() % 300), static_cast<char>('a' + i % 26));
    msg += std::to_string(i);
    if (tagged) msg = std::string(32, 'T') + msg;
    ASSERT_TRUE(producer->Push(msg, 1s, tagged ? 32 : 0).ok()) << i;
    HeldMessage held;
    ASSERT_TRUE(ring->PopHeld(&held, 1s, &pool, &AfterTag).ok()) << i;
    ASSERT_TRUE(held.in_place);
    ASSERT_EQ(held.bytes, msg);
    // In the ring's own mapping, its byte align_at at a 64-byte boundary.
    EXPECT_TRUE(Aligned(held.bytes.data() + (tagged ? 32 : 0))) << i;
    EXPECT_GT(ring->stats().bytes_held, msg.size());
  }
  EXPECT_EQ(ring->stats().bytes_held, 0u);
  EXPECT_EQ(ring->stats().bytes_used, 0u);  // every held message gave its space back
  EXPECT_EQ(pool.stats().allocated, 0u);    // nothing was copied
  EXPECT_EQ(producer->Push("x", 1s, 4).code(), StatusCode::kInvalidArgument);
}

TEST(RingTest, HeldSpaceReturnsInAnyOrderAndOutlivesTheRing) {
  const std::string name = UniqueName("order");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  BufferPool pool;
  std::vector<HeldMessage> held(3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(producer->Push(std::string(1000, static_cast<char>('a' + i)), 1s).ok());
    ASSERT_TRUE(ring->PopHeld(&held[i], 1s, &pool, nullptr).ok());
    ASSERT_TRUE(held[i].in_place);
  }
  const uint64_t all = ring->stats().bytes_used;
  EXPECT_EQ(ring->stats().bytes_held, all);
  held[1].owner.reset();  // not the oldest: the tail stays, the space is not free yet
  EXPECT_EQ(ring->stats().bytes_used, all);
  EXPECT_LT(ring->stats().bytes_held, all);
  held[0].owner.reset();  // the tail moves over the first two
  const uint64_t left = ring->stats().bytes_used;
  EXPECT_LT(left, all / 2);
  EXPECT_EQ(ring->stats().bytes_held, left);
  producer.reset();
  ring.reset();  // the consumer closes while the third is held
  EXPECT_FALSE(SegmentExists(name));
  EXPECT_EQ(held[2].bytes, std::string(1000, 'c'));  // still mapped (ASan would see it)
  held[2].owner.reset();
}

TEST(RingTest, HeldMessagesThatNeverGoMoveOutAndProducersKeepGoing) {
  // The consumer keeps every message in place and never lets go; producers of
  // messages up to the largest keep going, across the wraparound, and every
  // kept message still reads back as it was pushed.
  const std::string name = UniqueName("evict");
  auto ring = std::move(Ring::Create(name, 1 << 16)).ValueOrDie();
  auto producer = std::move(Ring::Attach(name)).ValueOrDie();
  const size_t largest = ring->max_message() - 16;  // with its suffix, the largest allowed
  EXPECT_EQ(producer->Push(std::string(ring->max_message(), 'x'), 1s).code(),
            StatusCode::kInvalidArgument);
  BufferPool pool;
  std::vector<HeldMessage> kept;
  std::vector<std::string> pushed;
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    const size_t size = i % 5 == 0 ? largest : 8 * (rng() % 600);
    pushed.push_back(std::string(size, static_cast<char>('a' + i % 26)) + std::to_string(i));
    ASSERT_TRUE(producer->Push(pushed.back(), 100ms).ok()) << i;
    HeldMessage held;
    ASSERT_TRUE(ring->PopHeld(&held, 1s, &pool, nullptr).ok()) << i;
    ASSERT_TRUE(held.in_place) << i;
    ASSERT_EQ(held.bytes, pushed.back());
    ASSERT_TRUE(Aligned(held.bytes.data()));
    kept.push_back(std::move(held));
  }
  const RingStats stats = ring->stats();
  EXPECT_GT(stats.evictions, 10u);
  EXPECT_LE(stats.bytes_held, ring->hold_limit() + ring->max_message());
  EXPECT_EQ(pool.stats().allocated, 0u);
  for (size_t i = 0; i < kept.size(); ++i) ASSERT_EQ(kept[i].bytes, pushed[i]) << i;
  // Released in any order, after the ring is gone: each mapping goes with its last message.
  producer.reset();
  ring.reset();
  std::shuffle(kept.begin(), kept.end(), rng);
  while (!kept.empty()) kept.pop_back();
  EXPECT_EQ(Mappings(name).first, 0);
}

}  // namespace
}  // namespace sparktf::feed
