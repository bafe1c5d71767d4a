#include "sparktf/feed/stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "sparktf/feed/consumer.h"
#include "sparktf/feed/producer.h"

namespace sparktf::feed {
namespace {

using namespace std::chrono_literals;

// A batch of rows [first, first + rows): column "x" float32[2] = (i, -i),
// column "s" bytes = decimal i.
std::string MakeBatch(int first, int rows) {
  std::vector<float> x;
  std::vector<uint64_t> offsets{0};
  std::string text;
  for (int i = first; i < first + rows; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(-i));
    text += std::to_string(i);
    offsets.push_back(text.size());
  }
  std::string bytes(offsets.size() * 8, '\0');
  std::memcpy(bytes.data(), offsets.data(), bytes.size());
  bytes += text;
  const auto n = static_cast<uint64_t>(rows);
  std::vector<ColumnView> cols = {
      {"x", ColumnType::kFloat32, {n, 2}, {reinterpret_cast<const char*>(x.data()), x.size() * 4}},
      {"s", ColumnType::kBytes, {n}, bytes}};
  std::string out;
  EXPECT_TRUE(EncodeBatch(cols, n, &out).ok());
  return out;
}

// The row ids in a batch, checked against both columns.
std::vector<int> RowIds(const std::string& batch) {
  uint64_t rows = 0;
  std::vector<ColumnView> cols;
  EXPECT_TRUE(DecodeBatch(batch, &rows, &cols).ok());
  std::vector<int> ids;
  for (uint64_t r = 0; r < rows; ++r) {
    float a, b;
    std::memcpy(&a, cols[0].data.data() + r * 8, 4);
    std::memcpy(&b, cols[0].data.data() + r * 8 + 4, 4);
    uint64_t o0, o1;
    std::memcpy(&o0, cols[1].data.data() + r * 8, 8);
    std::memcpy(&o1, cols[1].data.data() + (r + 1) * 8, 8);
    const std::string s(cols[1].data.substr((rows + 1) * 8 + o0, o1 - o0));
    EXPECT_EQ(a, -b);
    EXPECT_EQ(std::to_string(static_cast<int>(a)), s);
    ids.push_back(static_cast<int>(a));
  }
  return ids;
}

std::string UniqueName(const char* tag) {
  static int n = 0;
  return "/sparktf-test-" + std::string(tag) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(n++);
}

TEST(BatchAssemblerTest, RecutsBatchesAcrossChunksKeepingEveryRowOnce) {
  BatchAssembler a;
  ASSERT_TRUE(a.Add(MakeBatch(0, 5)).ok());
  ASSERT_TRUE(a.Add(MakeBatch(5, 3)).ok());
  ASSERT_TRUE(a.Add(MakeBatch(8, 9)).ok());
  EXPECT_EQ(a.rows(), 17u);
  std::vector<int> all;
  std::string out;
  for (uint64_t n : {4u, 4u, 1u, 7u, 100u}) {
    ASSERT_TRUE(a.Take(n, &out).ok());
    auto ids = RowIds(out);
    EXPECT_EQ(ids.size(), std::min<uint64_t>(n, 17 - all.size()));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::vector<int> expected(17);
  for (int i = 0; i < 17; ++i) expected[i] = i;
  EXPECT_EQ(all, expected);
  EXPECT_EQ(a.rows(), 0u);
  EXPECT_EQ(a.Take(1, &out).code(), StatusCode::kInvalidArgument);
}

TEST(BatchAssemblerTest, HandsOutRowsOfOneBatchAsViewsAndCopiesOnlyAcrossBatches) {
  auto first = std::make_shared<const std::string>(MakeBatch(0, 10));
  auto second = std::make_shared<const std::string>(MakeBatch(10, 10));
  BatchAssembler a;
  ASSERT_TRUE(a.Add(first).ok());
  ASSERT_TRUE(a.Add(second).ok());
  BufferPool pool(4);
  const auto ids_of = [](const BatchSlice& slice) {
    std::string encoded;
    EXPECT_TRUE(EncodeSlice(slice, &encoded).ok());
    return RowIds(encoded);
  };
  const auto in = [](const BatchSlice& s, const std::string& message) {
    const std::string_view v = SliceValues(s, 0);
    return v.data() >= message.data() && v.data() + v.size() <= message.data() + message.size();
  };
  BatchSlice s;
  ASSERT_TRUE(a.TakeSlice(4, &s, &pool).ok());  // rows 0-3: a view of the first message
  EXPECT_EQ(s.owner, first);
  EXPECT_TRUE(in(s, *first));
  EXPECT_EQ(SliceValues(s, 0).size(), 4u * 2 * 4);
  EXPECT_EQ(ids_of(s), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_TRUE(a.TakeSlice(6, &s, &pool).ok());  // rows 4-9: the rest of it, still a view
  EXPECT_EQ(s.owner, first);
  EXPECT_EQ(s.first_row, 4u);
  EXPECT_EQ(ids_of(s), (std::vector<int>{4, 5, 6, 7, 8, 9}));
  ASSERT_TRUE(a.TakeSlice(3, &s, &pool).ok());
  EXPECT_EQ(s.owner, second);
  ASSERT_TRUE(a.Add(MakeBatch(20, 10)).ok());
  ASSERT_TRUE(a.TakeSlice(10, &s, &pool).ok());  // rows 13-22: across two messages, copied
  EXPECT_NE(s.owner, second);
  EXPECT_FALSE(in(s, *second));
  EXPECT_EQ(s.first_row, 0u);
  std::vector<int> expected(10);
  for (int i = 0; i < 10; ++i) expected[i] = 13 + i;
  EXPECT_EQ(ids_of(s), expected);
  EXPECT_EQ(pool.stats().allocated, 1u);
  s = BatchSlice{};  // the copy's buffer goes back to the pool, and is used again
  EXPECT_EQ(pool.stats().free, 1u);
  ASSERT_TRUE(a.Add(MakeBatch(30, 10)).ok());
  ASSERT_TRUE(a.TakeSlice(10, &s, &pool).ok());
  EXPECT_EQ(pool.stats().allocated, 1u);
  EXPECT_EQ(pool.stats().reused, 1u);
  for (int i = 0; i < 10; ++i) expected[i] = 23 + i;
  EXPECT_EQ(ids_of(s), expected);
}

TEST(BatchAssemblerTest, TakesRowsOfABatchWithoutColumns) {  // batch_fuzz found it
  std::string empty;
  ASSERT_TRUE(EncodeBatch({}, 5, &empty).ok());
  BatchAssembler a;
  ASSERT_TRUE(a.Add(empty).ok());
  ASSERT_TRUE(a.Add(empty).ok());
  std::string out;
  ASSERT_TRUE(a.Take(7, &out).ok());  // across both
  EXPECT_EQ(*BatchRows(out), 7u);
  ASSERT_TRUE(a.Take(7, &out).ok());
  EXPECT_EQ(*BatchRows(out), 3u);
}

TEST(BufferPoolTest, ReusesBuffersKeepingCapacityAndFreesBeyondItsBound) {
  auto pool = std::make_unique<BufferPool>(2);
  std::shared_ptr<std::string> a = pool->Get(), b = pool->Get(), c = pool->Get();
  a->assign(1 << 20, 'x');
  const char* where = a->data();
  a.reset();
  b.reset();
  c.reset();  // the third is freed: two wait at most
  EXPECT_EQ(pool->stats().free, 2u);
  EXPECT_EQ(pool->stats().allocated, 3u);
  std::shared_ptr<std::string> d = pool->Get();
  std::shared_ptr<std::string> e = pool->Get();
  EXPECT_TRUE(d->empty() && e->empty());
  EXPECT_TRUE(d->data() == where || e->data() == where);  // the big one, emptied, not freed
  EXPECT_GE(std::max(d->capacity(), e->capacity()), size_t{1} << 20);
  EXPECT_EQ(pool->stats().reused, 2u);
  pool.reset();  // owners outlive the pool: their buffers are freed (ASan checks)
  d->assign(10, 'y');
  d.reset();
  e.reset();
}

TEST(BatchAssemblerTest, RejectsBatchesWithOtherColumns) {
  BatchAssembler a;
  ASSERT_TRUE(a.Add(MakeBatch(0, 2)).ok());
  std::vector<int64_t> v = {1, 2};
  std::vector<ColumnView> cols = {
      {"x", ColumnType::kInt64, {2}, {reinterpret_cast<const char*>(v.data()), 16}}};
  std::string other;
  ASSERT_TRUE(EncodeBatch(cols, 2, &other).ok());
  Status st = a.Add(other);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("x: float32[2]"), std::string::npos) << st.message();
  EXPECT_EQ(a.Add("garbage").code(), StatusCode::kInvalidArgument);
}

TEST(BatchAssemblerTest, KeepsAFlagWhereEveryRowHadIt) {
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<ColumnView> cols = {
      {"x", ColumnType::kFloat32, {2, 2}, {reinterpret_cast<const char*>(x.data()), 16}}};
  std::string lists, arrays;
  ASSERT_TRUE(EncodeBatch(cols, 2, &lists).ok());
  cols[0].row_arrays = true;
  ASSERT_TRUE(EncodeBatch(cols, 2, &arrays).ok());
  BatchAssembler a;
  ASSERT_TRUE(a.Add(arrays).ok());
  ASSERT_TRUE(a.Add(arrays).ok());
  ASSERT_TRUE(a.Add(lists).ok());
  const auto take = [&](uint64_t n) {
    std::string out;
    EXPECT_TRUE(a.Take(n, &out).ok());
    uint64_t rows = 0;
    std::vector<ColumnView> back;
    EXPECT_TRUE(DecodeBatch(out, &rows, &back).ok());
    EXPECT_EQ(rows, n);
    return back.empty() ? false : back[0].row_arrays;
  };
  EXPECT_TRUE(take(3)) << "rows of two batches of arrays";
  EXPECT_FALSE(take(2)) << "an array row and a list row: lists";
}

TEST(MarkerTest, RoundTripsAndRejectsMalformed) {
  Marker m{Marker::kBegin, 7, "/sparktf-x-1-r", 0};
  auto got = DecodeMarker(EncodeMarker(m));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->partition, 7);
  EXPECT_EQ(got->result_ring, "/sparktf-x-1-r");
  Marker e{Marker::kEnd, 7, "", 42};
  EXPECT_EQ(DecodeMarker(EncodeMarker(e))->rows, 42u);
  EXPECT_FALSE(IsMarker(MakeBatch(0, 1)));
  EXPECT_FALSE(DecodeMarker("STFM{\"kind\":\"end\"}").ok());
  EXPECT_FALSE(DecodeMarker("STFMnot json").ok());
}

TEST(FeedReaderTest, TrainFeedEndsWhenInputCloses) {
  const std::string name = UniqueName("train");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  std::thread producer([&] {
    auto feed = std::move(PartitionFeed::Open(name, 0, 0, "", 5s)).ValueOrDie();
    for (int i = 0; i < 100; i += 10) ASSERT_TRUE(feed->Push(MakeBatch(i, 10), 5s).ok());
    ASSERT_TRUE(feed->Finish(5s).ok());
    std::move(Ring::Attach(name)).ValueOrDie()->CloseInput();
  });
  std::vector<int> ids;
  while (true) {
    auto b = reader.Next(32, false, 5s);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    auto got = RowIds(**b);
    EXPECT_TRUE(got.size() == 32 || ids.size() + got.size() == 100);
    ids.insert(ids.end(), got.begin(), got.end());
  }
  producer.join();
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(reader.progress().consumed, 100u);
}

// TFoS's pattern: the training loop calls terminate() while a tf.data generator thread
// waits in next_batch for rows that will never come.
TEST(FeedReaderTest, TerminateFromAnotherThreadEndsAWaitingNext) {
  const std::string name = UniqueName("term");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  auto feed = std::move(PartitionFeed::Open(name, 0, 0, "", 5s)).ValueOrDie();
  ASSERT_TRUE(feed->Push(MakeBatch(0, 10), 5s).ok());
  std::atomic<bool> ended{false};
  std::thread generator([&] {
    auto b = reader.Next(4, false, 30s);
    ASSERT_TRUE(b.ok() && *b);
    b = reader.Next(8, true, 30s);  // 6 rows there, 8 wanted: waits
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_FALSE(*b);  // the end of the feed, not a timeout
    ended = true;
  });
  while (reader.progress().delivered < 10) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(100ms);  // the generator waits in Next
  const auto t0 = std::chrono::steady_clock::now();
  reader.Terminate();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  generator.join();
  EXPECT_TRUE(ended);
  const FeedProgress p = reader.progress();
  EXPECT_TRUE(p.finished);
  EXPECT_EQ(p.consumed, 4u);
  EXPECT_EQ(p.dropped, 6u);
  auto after = reader.Next(1, false, 1s);  // and it stays ended
  ASSERT_TRUE(after.ok() && !*after);
  EXPECT_FALSE(feed->Push(MakeBatch(10, 10), 1s).ok());  // producers are told to stop
}

TEST(FeedReaderTest, InferenceResultsReturnPerPartition) {
  const std::string name = UniqueName("infer");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  std::thread consumer([&] {
    while (true) {
      auto b = reader.Next(7, false, 5s);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (!*b) return;
      auto ids = RowIds(**b);
      ASSERT_TRUE(reader.PushResults(MakeBatch(ids.front() * 10, static_cast<int>(ids.size())), 5s).ok());
    }
  });
  for (int p = 0; p < 3; ++p) {
    auto feed = std::move(PartitionFeed::Open(name, 0, p, UniqueName("res"), 5s)).ValueOrDie();
    ASSERT_TRUE(feed->Push(MakeBatch(0, 10), 5s).ok());
    ASSERT_TRUE(feed->Push(MakeBatch(10, 5), 5s).ok());
    ASSERT_TRUE(feed->Finish(5s).ok());
    std::vector<int> results;
    for (const auto& r : feed->TakeResults()) {
      auto ids = RowIds(r);
      results.insert(results.end(), ids.begin(), ids.end());
    }
    // Batches never span the partition's two pushes' boundary at 15 rows:
    // 7, 7, 1 rows, answered from 0, 70 and 140.
    std::vector<int> expected;
    for (int start : {0, 70, 140}) {
      for (int i = 0; i < (start == 140 ? 1 : 7); ++i) expected.push_back(start + i);
    }
    EXPECT_EQ(results, expected);
  }
  std::move(Ring::Attach(name)).ValueOrDie()->CloseInput();
  consumer.join();
}

TEST(FeedReaderTest, MissingResultsAreAnErrorAtThePartitionEnd) {
  const std::string name = UniqueName("short");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  auto feed = std::move(PartitionFeed::Open(name, 0, 3, UniqueName("res"), 5s)).ValueOrDie();
  ASSERT_TRUE(feed->Push(MakeBatch(0, 4), 5s).ok());
  std::thread finisher([&] { EXPECT_FALSE(feed->Finish(2s).ok()); });
  auto b = reader.Next(10, false, 5s);
  ASSERT_TRUE(b.ok() && *b);
  EXPECT_EQ(reader.PushResults(MakeBatch(0, 5), 1s).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(reader.PushResults(MakeBatch(0, 3), 1s).ok());
  auto next = reader.Next(10, false, 1s);
  EXPECT_EQ(next.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(next.status().message().find("3 results for the 4 rows of partition 3"),
            std::string::npos)
      << next.status().ToString();
  reader.Fail("consumer failed");
  finisher.join();
}

TEST(FeedReaderTest, AbandonedInferencePartitionIsDroppedAndTheNextOneWorks) {
  const std::string name = UniqueName("abandon");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  {
    auto gone = std::move(PartitionFeed::Open(name, 0, 0, UniqueName("res"), 5s)).ValueOrDie();
    ASSERT_TRUE(gone->Push(MakeBatch(0, 4), 5s).ok());
  }  // destroyed unfinished: an abort marker follows its rows
  std::thread consumer([&] {
    auto b = reader.Next(2, false, 5s);  // two rows of partition 0, then it is abandoned
    ASSERT_TRUE(b.ok() && *b);
    b = reader.Next(10, false, 5s);  // skips the rest of partition 0: partition 1's rows
    ASSERT_TRUE(b.ok() && *b) << b.status().ToString();
    auto ids = RowIds(**b);
    EXPECT_EQ(ids, (std::vector<int>{100, 101, 102}));
    ASSERT_TRUE(reader.PushResults(MakeBatch(7, 3), 5s).ok());
  });
  auto next = std::move(PartitionFeed::Open(name, 0, 1, UniqueName("res"), 5s)).ValueOrDie();
  ASSERT_TRUE(next->Push(MakeBatch(100, 3), 5s).ok());
  ASSERT_TRUE(next->Finish(5s).ok());
  consumer.join();
  EXPECT_EQ(next->result_rows(), 3u);
  EXPECT_EQ(reader.progress().dropped, 2u);
}

TEST(FeedReaderTest, LockstepStopsEveryWorkerAtTheSameStep) {
  // Two readers in one process, with an in-memory coordinator.
  std::mutex mu;
  std::map<int, FeedProgress> reports;
  auto sync_for = [&](int id) {
    return [&, id](const FeedProgress& p) -> Result<Watermark> {
      std::lock_guard<std::mutex> lock(mu);
      reports[id] = p;
      Watermark w{UINT64_MAX, true};
      for (int k : {0, 1}) {
        auto it = reports.find(k);
        w.min_delivered = std::min(w.min_delivered, it == reports.end() ? 0 : it->second.delivered);
        w.all_closed = w.all_closed && it != reports.end() && it->second.closed;
      }
      return w;
    };
  };
  const std::string a = UniqueName("ls0"), b = UniqueName("ls1");
  FeedReader r0(std::move(Ring::Create(a, 1 << 20)).ValueOrDie(), sync_for(0));
  FeedReader r1(std::move(Ring::Create(b, 1 << 20)).ValueOrDie(), sync_for(1));
  auto feed = [](const std::string& ring, int rows) {
    auto f = std::move(PartitionFeed::Open(ring, 0, 0, "", 5s)).ValueOrDie();
    for (int i = 0; i < rows; i += 10) EXPECT_TRUE(f->Push(MakeBatch(i, 10), 5s).ok());
    EXPECT_TRUE(f->Finish(5s).ok());
    std::move(Ring::Attach(ring)).ValueOrDie()->CloseInput();
  };
  std::thread f0(feed, a, 1000), f1(feed, b, 100);
  int steps[2] = {0, 0};
  auto run = [&](FeedReader& r, int* s) {
    while (true) {
      auto got = r.Next(8, true, 10s);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      if (!*got) return;
      ++*s;
    }
  };
  std::thread c0(run, std::ref(r0), &steps[0]), c1(run, std::ref(r1), &steps[1]);
  f0.join();
  f1.join();
  c0.join();
  c1.join();
  EXPECT_EQ(steps[0], 12);  // 100 / 8
  EXPECT_EQ(steps[1], 12);
  EXPECT_EQ(r0.progress().dropped, 1000u - 96u);
  EXPECT_EQ(r1.progress().dropped, 4u);
  EXPECT_TRUE(r0.progress().finished && r1.progress().finished);
}

TEST(TagTest, RoundTripsAndRejectsMalformed) {
  const BatchTag t{0xfeedbeefcafeULL, -3, 12345};
  const std::string enc = EncodeTag(t);
  ASSERT_EQ(enc.size(), kTagSize);
  auto got = DecodeTag(enc + MakeBatch(0, 1));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->feed, t.feed);
  EXPECT_EQ(got->partition, -3);
  EXPECT_EQ(got->first_row, 12345u);
  EXPECT_FALSE(IsTagged(MakeBatch(0, 1)));
  EXPECT_FALSE(DecodeTag(enc.substr(0, kTagSize - 1)).ok());
  std::string reserved = enc;
  reserved[5] = 1;
  EXPECT_EQ(DecodeTag(reserved).status().code(), StatusCode::kInvalidArgument);
}

TEST(BatchAssemblerTest, AddSkipsBytesAndRows) {
  BatchAssembler a;
  ASSERT_TRUE(a.Add(EncodeTag({}) + MakeBatch(0, 10), kTagSize, 4).ok());
  EXPECT_EQ(a.rows(), 6u);
  std::string out;
  ASSERT_TRUE(a.Take(6, &out).ok());
  EXPECT_EQ(RowIds(out), (std::vector<int>{4, 5, 6, 7, 8, 9}));
  ASSERT_TRUE(a.Add(EncodeTag({}) + MakeBatch(10, 3), kTagSize, 0).ok());
  ASSERT_TRUE(a.Take(3, &out).ok());  // a whole batch, handed out without its tag
  EXPECT_EQ(RowIds(out), (std::vector<int>{10, 11, 12}));
  EXPECT_EQ(a.Add(MakeBatch(0, 2), 0, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Add(MakeBatch(0, 2), 1 << 20, 0).code(), StatusCode::kInvalidArgument);
}

// Drains a training reader whose input is closed: every row id handed out.
std::vector<int> DrainTrain(FeedReader& reader) {
  std::vector<int> ids;
  while (true) {
    auto b = reader.Next(16, false, 5s);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !*b) return ids;
    auto got = RowIds(**b);
    ids.insert(ids.end(), got.begin(), got.end());
  }
}

std::vector<int> Range(int first, int n) {
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = first + i;
  return out;
}

TEST(FeedReaderTest, RetriedFeedingTaskDeliversEachRowOnce) {
  const std::string name = UniqueName("retry");
  FeedReader reader(std::move(Ring::Create(name, 1 << 20)).ValueOrDie(), nullptr);
  {  // attempt 0 of partition 0 pushes 30 of its 100 rows, then dies
    auto first = std::move(PartitionFeed::Open(name, 9, 0, "", 5s)).ValueOrDie();
    for (int i = 0; i < 30; i += 10) ASSERT_TRUE(first->Push(MakeBatch(i, 10), 5s).ok());
  }
  // attempt 1 pushes all of it, in batches that straddle what attempt 0 delivered
  auto retry = std::move(PartitionFeed::Open(name, 9, 0, "", 5s)).ValueOrDie();
  for (int i = 0; i < 100; i += 7) ASSERT_TRUE(retry->Push(MakeBatch(i, std::min(7, 100 - i)), 5s).ok());
  ASSERT_TRUE(retry->Finish(5s).ok());
  // another partition of the job, and the same partition of another job, are their own
  auto other = std::move(PartitionFeed::Open(name, 9, 1, "", 5s)).ValueOrDie();
  ASSERT_TRUE(other->Push(MakeBatch(1000, 20), 5s).ok());
  ASSERT_TRUE(other->Finish(5s).ok());
  auto next_job = std::move(PartitionFeed::Open(name, 10, 0, "", 5s)).ValueOrDie();
  ASSERT_TRUE(next_job->Push(MakeBatch(0, 20), 5s).ok());
  ASSERT_TRUE(next_job->Finish(5s).ok());
  std::move(Ring::Attach(name)).ValueOrDie()->CloseInput();

  std::vector<int> want = Range(0, 100);
  for (int i : Range(1000, 20)) want.push_back(i);
  for (int i : Range(0, 20)) want.push_back(i);
  EXPECT_EQ(DrainTrain(reader), want);
  EXPECT_EQ(reader.progress().duplicates, 30u);
  EXPECT_EQ(reader.progress().delivered, 140u);
}

TEST(FeedReaderTest, SpeculativeCopiesOfAFeedingTaskInterleaveIntoOneCopy) {
  const std::string name = UniqueName("spec");
  FeedReader reader(std::move(Ring::Create(name, 4 << 20)).ValueOrDie(), nullptr);
  auto attempt = [&](int step) {
    auto f = std::move(PartitionFeed::Open(name, 5, 2, "", 5s)).ValueOrDie();
    for (int i = 0; i < 3000; i += step) {
      ASSERT_TRUE(f->Push(MakeBatch(i, std::min(step, 3000 - i)), 5s).ok());
    }
    ASSERT_TRUE(f->Finish(5s).ok());
  };
  std::thread a(attempt, 11), b(attempt, 17);
  a.join();
  b.join();
  std::move(Ring::Attach(name)).ValueOrDie()->CloseInput();
  EXPECT_EQ(DrainTrain(reader), Range(0, 3000));
  EXPECT_EQ(reader.progress().duplicates, 3000u);
}

TEST(FeedReaderTest, TaggedBatchAfterAGapIsDataLoss) {
  const std::string name = UniqueName("gap");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  auto ring = std::move(Ring::Attach(name)).ValueOrDie();
  ASSERT_TRUE(ring->Push(EncodeTag({1, 0, 5}) + MakeBatch(5, 5), 1s).ok());
  auto got = reader.Next(5, false, 2s);
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("starts at row 5"), std::string::npos)
      << got.status().message();
}

// What lets the op SparktfFeedNext make tensors over the reader's buffers: every payload
// of what the reader hands out starts at a 64-byte aligned address, wherever the message
// lay in the ring (8-byte aligned) and whether it was tagged or not, and so do re-cut
// batches that span two messages.
TEST(FeedReaderTest, HandsOutPayloadsAt64ByteAlignedAddresses) {
  const std::string name = UniqueName("align");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  auto ring = std::move(Ring::Attach(name)).ValueOrDie();
  const auto aligned = [](const BatchSlice& slice) {
    for (const ColumnView& c : slice.columns) {
      if (reinterpret_cast<uintptr_t>(c.data.data()) % 64 != 0) return false;
    }
    return reinterpret_cast<uintptr_t>(SliceValues(slice, 0).data()) % 64 == 0;
  };
  int row = 0;
  uint64_t tagged = 0;  // rows of partition 0 of feed 7 so far
  for (int i = 0; i < 12; ++i) {  // messages of 3..14 rows: their ring offsets vary
    const int rows = 3 + i;
    std::string message = MakeBatch(row, rows);
    if (i % 2) {
      message = EncodeTag({7, 0, tagged}) + message;
      tagged += rows;
    }
    ASSERT_TRUE(ring->Push(message, 1s).ok());
    auto got = reader.NextSlice(rows, true, 1s);  // exactly that message: a view of it
    ASSERT_TRUE(got.ok() && *got) << got.status().ToString();
    EXPECT_TRUE(aligned(**got)) << "message " << i;
    EXPECT_EQ((*got)->first_row, 0u);
    row += rows;
  }
  // Tagged messages pushed without their alignment offset (Ring::Push's align_at) are
  // copied to an aligned buffer; the others are handed out in the ring itself.
  EXPECT_EQ(reader.progress().in_place, 6u);
  EXPECT_EQ(reader.progress().copied, 6u);
  ASSERT_TRUE(ring->Push(MakeBatch(row, 5), 1s).ok());
  ASSERT_TRUE(ring->Push(MakeBatch(row + 5, 5), 1s).ok());
  auto across = reader.NextSlice(8, true, 1s);  // spans both: copied into a pooled buffer
  ASSERT_TRUE(across.ok() && *across);
  EXPECT_TRUE(aligned(**across));
  std::string encoded;
  ASSERT_TRUE(EncodeSlice(**across, &encoded).ok());
  EXPECT_EQ(RowIds(encoded), Range(row, 8));
}

TEST(FeedReaderTest, TerminateMakesProducersSkip) {
  const std::string name = UniqueName("term");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  auto feed = std::move(PartitionFeed::Open(name, 0, 0, "", 5s)).ValueOrDie();
  ASSERT_TRUE(feed->Push(MakeBatch(0, 10), 5s).ok());
  ASSERT_TRUE(reader.Next(5, true, 1s).ok());
  reader.Terminate();
  EXPECT_EQ(feed->Push(MakeBatch(10, 10), 5s).code(), StatusCode::kCancelled);
  reader.Fail("boom");  // a later failure does not change the first reason
  EXPECT_EQ(feed->Push(MakeBatch(10, 10), 5s).code(), StatusCode::kCancelled);
}

TEST(FeedReaderTest, TaggedBatchesAreHandedOutInTheRingAndSurviveBeingKept) {
  // A training feed's batches are tagged; the producer aligns them, so they are
  // read in place. The test keeps every slice far past the ring's size: the
  // held messages move out of the ring, and every kept slice keeps its rows.
  const std::string name = UniqueName("kept");
  FeedReader reader(std::move(Ring::Create(name, 1 << 16)).ValueOrDie(), nullptr);
  std::vector<BatchSlice> kept;
  std::thread producer([&] {
    auto feed = std::move(PartitionFeed::Open(name, 7, 3, "", 5s)).ValueOrDie();
    for (int b = 0; b < 200; ++b) ASSERT_TRUE(feed->Push(MakeBatch(b * 50, 50), 5s).ok());
    ASSERT_TRUE(feed->Finish(5s).ok());
  });
  for (int b = 0; b < 200; ++b) {
    auto got = reader.NextSlice(50, true, 5s);
    ASSERT_TRUE(got.ok() && *got) << got.status().ToString();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(SliceValues(**got, 0).data()) % 64, 0u);
    kept.push_back(std::move(**got));
  }
  producer.join();
  const FeedProgress p = reader.progress();
  EXPECT_EQ(p.in_place, 200u);
  EXPECT_EQ(p.copied, 0u);
  EXPECT_GT(p.evictions, 5u);  // 200 batches of ~1.6 KB in a 64 KiB ring, none let go
  for (int b = 0; b < 200; ++b) {
    std::string encoded;
    ASSERT_TRUE(EncodeSlice(kept[b], &encoded).ok());
    ASSERT_EQ(RowIds(encoded), Range(b * 50, 50)) << b;
  }
}

}  // namespace
}  // namespace sparktf::feed
