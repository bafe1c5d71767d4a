#include "sparktf/feed/arrow_feed.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sparktf::feed {
namespace {

// An Arrow array and its schema built by hand, owning every buffer, as a
// producer of the C data interface lays them out.
struct Node {
  std::string format, name;
  int64_t length = 0, offset = 0, null_count = 0;
  std::vector<std::optional<std::string>> buffers;  // nullopt: a null buffer
  std::vector<std::unique_ptr<Node>> children;

  ArrowSchema schema{};
  ArrowArray array{};
  std::vector<const void*> ptrs;
  std::vector<ArrowSchema*> schema_children;
  std::vector<ArrowArray*> array_children;

  // Sets the C structs' pointers (children first).
  Node& Finish() {
    ptrs.clear();
    for (auto& b : buffers) ptrs.push_back(b ? b->data() : nullptr);
    schema_children.clear();
    array_children.clear();
    for (auto& c : children) {
      c->Finish();
      schema_children.push_back(&c->schema);
      array_children.push_back(&c->array);
    }
    schema = ArrowSchema{format.c_str(), name.c_str(), nullptr, 0,
                         static_cast<int64_t>(children.size()), schema_children.data(),
                         nullptr, nullptr, nullptr};
    array = ArrowArray{length, null_count, offset, static_cast<int64_t>(ptrs.size()),
                       static_cast<int64_t>(children.size()), ptrs.data(), array_children.data(),
                       nullptr, nullptr, nullptr};
    return *this;
  }
};

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string Bitmap(const std::vector<bool>& bits) {
  std::string out((bits.size() + 7) / 8, '\0');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) out[i / 8] = static_cast<char>(out[i / 8] | (1 << (i % 8)));
  }
  return out;
}

// An array of `values` values from index `offset` on, without a validity bitmap.
std::unique_ptr<Node> Array(std::string format, std::string name, size_t values, int64_t offset) {
  auto n = std::make_unique<Node>();
  n->format = std::move(format);
  n->name = std::move(name);
  n->length = static_cast<int64_t>(values) - offset;
  n->offset = offset;
  n->buffers = {std::nullopt};
  return n;
}

template <typename T>
std::unique_ptr<Node> Fixed(std::string format, std::string name, std::vector<T> values,
                            int64_t offset = 0) {
  auto n = Array(std::move(format), std::move(name), values.size(), offset);
  n->buffers.push_back(Bytes(values));
  return n;
}

std::unique_ptr<Node> Strings(std::string format, std::string name, std::vector<std::string> v,
                              int64_t offset = 0) {
  auto n = Array(std::move(format), std::move(name), v.size(), offset);
  std::vector<int32_t> offsets{0};
  std::string data;
  for (auto& s : v) {
    data += s;
    offsets.push_back(static_cast<int32_t>(data.size()));
  }
  n->buffers.push_back(Bytes(offsets));
  n->buffers.push_back(data);
  return n;
}

std::unique_ptr<Node> List(std::string name, std::vector<int32_t> offsets,
                           std::unique_ptr<Node> values, int64_t offset = 0) {
  auto n = Array("+l", std::move(name), offsets.size() - 1, offset);
  n->buffers.push_back(Bytes(offsets));
  n->children.push_back(std::move(values));
  return n;
}

std::unique_ptr<Node> Batch(std::vector<std::unique_ptr<Node>> columns, int64_t length,
                            int64_t offset = 0) {
  auto n = std::make_unique<Node>();
  n->format = "+s";
  n->length = length;
  n->offset = offset;
  n->buffers = {std::nullopt};
  n->children = std::move(columns);
  n->Finish();
  return n;
}

std::vector<ColumnView> Encoded(Node& batch, int64_t begin, int64_t rows, std::string* out) {
  ArrowFeeder feeder;
  out->clear();
  Status st = feeder.Encode(batch.schema, batch.array, begin, rows, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  uint64_t n = 0;
  std::vector<ColumnView> cols;
  EXPECT_TRUE(DecodeBatch(*out, &n, &cols).ok());
  EXPECT_EQ(n, static_cast<uint64_t>(rows));
  return cols;
}

template <typename T>
std::vector<T> Values(const ColumnView& c) {
  std::vector<T> v(c.data.size() / sizeof(T));
  std::memcpy(v.data(), c.data.data(), c.data.size());
  return v;
}

std::vector<std::string> Texts(const ColumnView& c) {
  const uint64_t n = NumValues(c.dims);
  std::vector<std::string> out;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t a, b;
    std::memcpy(&a, c.data.data() + i * 8, 8);
    std::memcpy(&b, c.data.data() + (i + 1) * 8, 8);
    out.emplace_back(c.data.data() + (n + 1) * 8 + a, b - a);
  }
  return out;
}

std::string ErrorOf(Node& batch) {
  ArrowFeeder feeder;
  std::string out;
  Status st = feeder.Encode(batch.schema, batch.array, 0, batch.length, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

TEST(ArrowFeederTest, NumbersKeepTheirTypeOrWidenAndRespectEveryOffset) {
  std::vector<std::unique_ptr<Node>> cols;
  // The batch starts at row 1 of its struct; the float column also at its own row 1.
  cols.push_back(Fixed<float>("f", "f32", {9, 9, 0.5f, 1.5f, -2.0f}, 1));
  cols.push_back(Fixed<double>("g", "f64", {1, 2, 3, 4}));
  cols.push_back(Fixed<int64_t>("l", "i64", {10, -20, 30, 40}));
  cols.push_back(Fixed<int32_t>("i", "i32", {7, 8, 9, 10}));
  cols.push_back(Fixed<int8_t>("c", "i8", {-1, -128, 127, 5}));
  cols.push_back(Fixed<int16_t>("s", "i16", {-300, 300, 0, 1}));
  cols.push_back(Fixed<uint8_t>("C", "u8", {200, 201, 202, 203}));
  auto bools = std::make_unique<Node>();
  bools->format = "b";
  bools->name = "flag";
  bools->length = 4;
  bools->buffers = {std::nullopt, Bitmap({true, false, true, true})};
  cols.push_back(std::move(bools));
  auto batch = Batch(std::move(cols), 3, 1);

  std::string out;
  auto c = Encoded(*batch, 0, 3, &out);
  ASSERT_EQ(c.size(), 8u);
  EXPECT_EQ(c[0].name, "f32");
  EXPECT_EQ(c[0].type, ColumnType::kFloat32);
  EXPECT_EQ(Values<float>(c[0]), (std::vector<float>{0.5f, 1.5f, -2.0f}));  // struct row 1 = f32 row 2
  EXPECT_EQ(c[1].type, ColumnType::kFloat64);
  EXPECT_EQ(Values<double>(c[1]), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(Values<int64_t>(c[2]), (std::vector<int64_t>{-20, 30, 40}));
  EXPECT_EQ(Values<int32_t>(c[3]), (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(c[4].type, ColumnType::kInt32);
  EXPECT_EQ(Values<int32_t>(c[4]), (std::vector<int32_t>{-128, 127, 5}));
  EXPECT_EQ(Values<int32_t>(c[5]), (std::vector<int32_t>{300, 0, 1}));
  EXPECT_EQ(c[6].type, ColumnType::kUInt8);
  EXPECT_EQ(Values<uint8_t>(c[6]), (std::vector<uint8_t>{201, 202, 203}));
  EXPECT_EQ(c[7].type, ColumnType::kBool);
  EXPECT_EQ(Values<uint8_t>(c[7]), (std::vector<uint8_t>{0, 1, 1}));
  for (const auto& col : c) EXPECT_EQ(col.dims, (std::vector<uint64_t>{3}));
}

TEST(ArrowFeederTest, StringsAreTextAndBinaryIsBytes) {
  std::vector<std::unique_ptr<Node>> cols;
  cols.push_back(Strings("u", "s", {"skip", "a", "", "\xc3\xbc"}, 1));
  cols.push_back(Strings("z", "raw", {std::string("\0", 1), "xy", "", "last"}));
  auto batch = Batch(std::move(cols), 3);
  std::string out;
  auto c = Encoded(*batch, 1, 2, &out);  // rows 1..2
  EXPECT_EQ(c[0].type, ColumnType::kBytes);
  EXPECT_TRUE(c[0].text);
  EXPECT_EQ(Texts(c[0]), (std::vector<std::string>{"", "\xc3\xbc"}));
  EXPECT_FALSE(c[1].text);
  EXPECT_EQ(Texts(c[1]), (std::vector<std::string>{"xy", ""}));
}

TEST(ArrowFeederTest, ListsBecomeDimensionsWhateverTheirOffsets) {
  std::vector<std::unique_ptr<Node>> cols;
  // list<float>: rows of 2, the list array starting at its row 1, values at their element 1.
  cols.push_back(List("v", {0, 2, 4, 6, 8},
                      Fixed<float>("f", "item", {0, 1, 2, 3, 4, 5, 6, 7, 8}, 1), 1));
  // fixed_size_list<int32, 3>.
  auto fixed = std::make_unique<Node>();
  fixed->format = "+w:3";
  fixed->name = "fixed";
  fixed->length = 3;
  fixed->buffers = {std::nullopt};
  fixed->children.push_back(Fixed<int32_t>("i", "item", {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  cols.push_back(std::move(fixed));
  // list<list<bool>>: rows of 2 x 1.
  auto inner_bools = std::make_unique<Node>();
  inner_bools->format = "b";
  inner_bools->length = 6;
  inner_bools->buffers = {std::nullopt, Bitmap({true, false, false, true, true, true})};
  cols.push_back(List("nested", {0, 2, 4, 6}, List("item", {0, 1, 2, 3, 4, 5, 6},
                                                   std::move(inner_bools))));
  cols.push_back(List("texts", {0, 1, 2, 3}, Strings("u", "item", {"x", "yy", "zzz"})));
  auto batch = Batch(std::move(cols), 3);
  std::string out;
  auto c = Encoded(*batch, 1, 2, &out);
  EXPECT_EQ(c[0].dims, (std::vector<uint64_t>{2, 2}));
  // Row 1 of the batch is row 2 of the list, elements 4..5 of the list = values 5, 6 (offset 1).
  EXPECT_EQ(Values<float>(c[0]), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(c[1].dims, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(Values<int32_t>(c[1]), (std::vector<int32_t>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(c[2].dims, (std::vector<uint64_t>{2, 2, 1}));
  EXPECT_EQ(Values<uint8_t>(c[2]), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(c[3].dims, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(Texts(c[3]), (std::vector<std::string>{"yy", "zzz"}));
}

TEST(ArrowFeederTest, RefusesNullsRaggedArraysOtherTypesAndBadOffsetsNamingTheColumn) {
  {
    std::vector<std::unique_ptr<Node>> cols;
    cols.push_back(Fixed<double>("g", "x", {1, 2}));
    cols.back()->null_count = 1;
    cols.back()->buffers[0] = Bitmap({true, false});
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' has nulls; fill or drop them before feeding");
  }
  {
    auto values = Fixed<double>("g", "item", {1, 2});
    values->null_count = 1;
    values->buffers[0] = Bitmap({true, false});
    std::vector<std::unique_ptr<Node>> cols;
    cols.push_back(List("x", {0, 1, 2}, std::move(values)));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' has null elements; fill or drop them before feeding");
  }
  {
    std::vector<std::unique_ptr<Node>> cols;
    cols.push_back(List("x", {0, 2, 3}, Fixed<double>("g", "item", {1, 2, 3})));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' holds arrays of different lengths (1..2); feeding "
                               "needs one length per column");
  }
  {
    std::vector<std::unique_ptr<Node>> cols;
    cols.push_back(Fixed<int64_t>("tss:", "when", {1, 2}));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'when' has type timestamp, which cannot be fed; use "
                               "numbers, strings or arrays of numbers");
  }
  {
    std::vector<std::unique_ptr<Node>> cols;
    cols.push_back(List("x", {0, 2, 1}, Fixed<double>("g", "item", {1, 2})));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' has an Arrow array with invalid offsets");
  }
  {
    std::vector<std::unique_ptr<Node>> cols;  // offsets past the values' length
    cols.push_back(List("x", {0, 2, 4}, Fixed<double>("g", "item", {1, 2, 3})));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' has an Arrow array shorter than its offsets say");
  }
  {
    std::vector<std::unique_ptr<Node>> cols;  // a column shorter than the batch
    cols.push_back(Fixed<double>("g", "x", {1}));
    auto batch = Batch(std::move(cols), 2);
    EXPECT_EQ(ErrorOf(*batch), "column 'x' has an Arrow array shorter than its offsets say");
  }
}

TEST(ArrowFeederTest, FeedCutsBatchesBySizeAndKeepsEachColumnsShape) {
  std::vector<float> values(1000 * 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  std::vector<int32_t> offsets;
  for (int32_t i = 0; i <= 1000; ++i) offsets.push_back(4 * i);
  std::vector<std::unique_ptr<Node>> cols;
  cols.push_back(List("v", offsets, Fixed<float>("f", "item", values)));
  auto batch = Batch(std::move(cols), 1000);

  ArrowFeeder feeder(/*target_bytes=*/1600, /*first_rows=*/10);  // 100 rows of 16 bytes a batch
  std::vector<uint64_t> sizes;
  std::vector<float> seen;
  auto push = [&](MessageParts parts, uint64_t rows) {
    std::string msg;
    for (auto p : parts) msg += p;
    uint64_t n = 0;
    std::vector<ColumnView> c;
    Status st = DecodeBatch(msg, &n, &c);
    if (!st.ok()) return st;
    EXPECT_EQ(n, rows);
    auto v = Values<float>(c[0]);
    seen.insert(seen.end(), v.begin(), v.end());
    sizes.push_back(rows);
    return Status::OK();
  };
  uint64_t pushed = 0;
  ASSERT_TRUE(feeder.Feed(batch->schema, batch->array, push, &pushed).ok());
  EXPECT_EQ(pushed, 1000u);
  EXPECT_EQ(seen, values);
  ASSERT_GE(sizes.size(), 3u);
  // Then sized by the bytes a row took: 16, and the share of the 64-byte header and of the
  // payload's padding to 64 (94 rows: 64 + 1536 bytes, 17 a row).
  EXPECT_EQ(sizes[0], 10u);
  for (size_t i = 2; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 94u);

  // A consumer that stops reading stops the feed, with the rows pushed so far counted.
  ArrowFeeder stopping;
  int calls = 0;
  pushed = 0;
  Status st = stopping.Feed(batch->schema, batch->array, [&](MessageParts, uint64_t) {
    return ++calls == 2 ? Status::Cancelled("stopped") : Status::OK();
  }, &pushed);
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(pushed, 256u);

  // Arrays of another length in a later batch of the same feeder are refused.
  std::vector<std::unique_ptr<Node>> other;
  other.push_back(List("v", {0, 3}, Fixed<float>("f", "item", {1, 2, 3})));
  auto wider = Batch(std::move(other), 1);
  st = feeder.Feed(wider->schema, wider->array, push, &pushed);
  EXPECT_EQ(st.message(), "column 'v' holds arrays of shape [3] here and [4] in an earlier "
                          "batch; feeding needs one shape per column");
}

}  // namespace
}  // namespace sparktf::feed
