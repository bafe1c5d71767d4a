#include "sparktf/feed/row_batcher.h"

#include <gtest/gtest.h>

#include <cstring>

#include "sparktf/feed/testutil_internal.h"

namespace sparktf::feed {
namespace {

using testutil::FromHex;

// Pickles written by CPython 3.11 (pickle.dumps(rows, 5), numpy 2).
// [(0.5, 7, [1.0, 2.0], b'ab', True), (1.5, -3, [3.0, 4.5], 'cd', False)]
const char* kTwoRows =
    "8005955c000000000000005d942828473fe00000000000004b075d9428473ff000000000000047400000000000"
    "000065430261629488749428473ff80000000000004afdffffff5d94284740080000000000004740120000000000"
    "00658c02636494897494652e";
// [(2.5, 9, [5.0, 6.0], b'', True)]
const char* kOneMore =
    "8005952c000000000000005d94284740040000000000004b095d942847401400000000000047401800000000000065"
    "430094887494612e";
// [(2.5, 9, [5, 6], b'', True)]: the list holds ints, not floats
const char* kIntList =
    "8005951e000000000000005d94284740040000000000004b095d94284b054b0665430094887494612e";
// [np.arange(4, dtype=np.float32).reshape(2, 2), np.ones((2, 2), np.float32)]
const char* kArrays =
    "800595b5000000000000005d94288c136e756d70792e5f636f72652e6e756d65726963948c0b5f66726f6d627566"
    "66657294939428961000000000000000000000000000803f0000004000004040948c056e756d7079948c05647479"
    "70659493948c02663494898887945294284b038c013c944e4e4e4affffffff4affffffff4b007494624b024b0286"
    "948c014394749452946803289610000000000000000000803f0000803f0000803f0000803f94680a4b024b028694"
    "680e74945294652e";
// [(1.0, [1.0, 2]), (2.0, [3.0, 4.0])]: a list that mixes a float and an int
const char* kMixedList =
    "80059540000000000000005d9428473ff00000000000005d9428473ff00000000000004b0265869447400000000000"
    "00005d9428474008000000000000474010000000000000658694652e";

template <typename T>
std::vector<T> Values(const ColumnView& c) {
  std::vector<T> out(c.data.size() / sizeof(T));
  std::memcpy(out.data(), c.data.data(), out.size() * sizeof(T));
  return out;
}

// The texts of a kBytes column.
std::vector<std::string> Texts(const ColumnView& c) {
  const uint64_t n = c.dims[0];
  std::vector<uint64_t> offsets(n + 1);
  std::memcpy(offsets.data(), c.data.data(), (n + 1) * 8);
  std::vector<std::string> out;
  for (uint64_t i = 0; i < n; ++i) {
    out.emplace_back(c.data.substr((n + 1) * 8 + offsets[i], offsets[i + 1] - offsets[i]));
  }
  return out;
}

struct Decoded {
  std::string batch;  // what the views point into
  uint64_t rows = 0;
  std::vector<ColumnView> columns;
};

Decoded TakeAndDecode(RowBatcher& b) {
  Decoded d;
  auto taken = b.Take();
  EXPECT_TRUE(taken.ok()) << taken.status().ToString();
  if (!taken.ok()) return d;
  d.batch = std::move(taken).ValueOrDie();
  EXPECT_TRUE(DecodeBatch(d.batch, &d.rows, &d.columns).ok());
  return d;
}

TEST(RowBatcherTest, TypedRowsEncodeEveryShape) {
  RowBatcher b({{"x", "n", "ok", "text", "seq", "img"}});
  ASSERT_TRUE(b.StartBatch(true, 6).ok());
  b.column(0).Start({ColumnShape::kScalar, ColumnType::kFloat32, {}});
  b.column(1).Start({ColumnShape::kScalar, ColumnType::kInt64, {}});
  b.column(2).Start({ColumnShape::kScalar, ColumnType::kBool, {}});
  b.column(3).Start({ColumnShape::kScalar, ColumnType::kBytes, {}});
  b.column(4).Start({ColumnShape::kSequence, ColumnType::kFloat32, {3}});
  b.column(5).Start({ColumnShape::kArray, ColumnType::kUInt8, {2, 2}});
  for (int r = 0; r < 3; ++r) {
    b.column(0).PutFloat32(0.5f * static_cast<float>(r));
    b.column(1).PutInt64(-1000000000000LL * r);
    b.column(2).PutBool(r == 1);
    b.column(3).PutText(std::string(static_cast<size_t>(r), 'a' + static_cast<char>(r)), true);
    ASSERT_TRUE(b.column(4).CheckSequence(3).ok());
    char* out = b.column(4).Extend(3);
    for (int i = 0; i < 3; ++i) {
      const float f = static_cast<float>(10 * r + i);
      std::memcpy(out + 4 * i, &f, 4);
    }
    const std::string img(4, static_cast<char>(r + 1));
    const std::vector<uint64_t> shape{2, 2};
    ASSERT_TRUE(b.column(5).PutArray(ColumnType::kUInt8, shape, img).ok());
    for (size_t c = 0; c < 6; ++c) b.column(c).EndRow();
    b.EndRow();
  }
  EXPECT_EQ(b.rows(), 3u);
  Decoded d = TakeAndDecode(b);
  ASSERT_EQ(d.rows, 3u);
  ASSERT_EQ(d.columns.size(), 6u);
  EXPECT_EQ(d.columns[0].name, "x");
  EXPECT_EQ(Values<float>(d.columns[0]), (std::vector<float>{0, 0.5f, 1}));
  EXPECT_EQ(Values<int64_t>(d.columns[1]),
            (std::vector<int64_t>{0, -1000000000000LL, -2000000000000LL}));
  EXPECT_EQ(Values<uint8_t>(d.columns[2]), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(d.columns[3].type, ColumnType::kBytes);
  EXPECT_EQ(Texts(d.columns[3]), (std::vector<std::string>{"", "b", "cc"}));
  EXPECT_TRUE(d.columns[3].text) << "every value was a str";
  EXPECT_EQ(d.columns[4].dims, (std::vector<uint64_t>{3, 3}));
  EXPECT_EQ(Values<float>(d.columns[4]), (std::vector<float>{0, 1, 2, 10, 11, 12, 20, 21, 22}));
  EXPECT_EQ(d.columns[5].dims, (std::vector<uint64_t>{3, 2, 2}));
  EXPECT_TRUE(d.columns[5].row_arrays) << "rows of arrays are marked, to come back as arrays";
  EXPECT_FALSE(d.columns[4].row_arrays) << "rows of lists are not";
  EXPECT_EQ(Values<uint8_t>(d.columns[5]),
            (std::vector<uint8_t>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(b.rows(), 0u);  // Take starts a new batch
}

TEST(RowBatcherTest, MismatchesNameTheRowAndColumn) {
  RowBatcher b;
  ASSERT_TRUE(b.StartBatch(true, 2).ok());
  ColumnBuilder& seq = b.column(0);
  ColumnBuilder& img = b.column(1);
  EXPECT_EQ(seq.name(), "0");
  EXPECT_EQ(img.name(), "1");
  seq.Start({ColumnShape::kSequence, ColumnType::kInt64, {2}});
  img.Start({ColumnShape::kArray, ColumnType::kFloat32, {3}});
  const std::vector<uint64_t> three{3}, four{4};
  ASSERT_TRUE(seq.CheckSequence(2).ok());
  seq.PutInt64(1);
  seq.PutInt64(2);
  seq.EndRow();
  ASSERT_TRUE(img.PutArray(ColumnType::kFloat32, three, std::string(12, '\0')).ok());
  img.EndRow();
  b.EndRow();

  Status st = seq.CheckSequence(3);
  EXPECT_TRUE(st.code() == StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "row 1, column '0': has 3 values but the first row had 2");
  st = img.PutArray(ColumnType::kFloat32, four, std::string(16, '\0'));
  EXPECT_EQ(st.message(), "row 1, column '1': array shape or dtype differs from the first row's");
  st = img.PutArray(ColumnType::kFloat64, three, std::string(24, '\0'));
  EXPECT_TRUE(st.code() == StatusCode::kInvalidArgument);
  st = img.PutArray(ColumnType::kFloat32, three, std::string(11, '\0'));
  EXPECT_TRUE(st.code() == StatusCode::kInvalidArgument) << "a buffer shorter than its shape";
  EXPECT_EQ(img.nbytes(), 12u + 8u) << "nothing appended by a refused put";
  EXPECT_TRUE(img.Error("x").message().starts_with("row 1, column '1'"));
}

TEST(RowBatcherTest, NamesMustFitTheRows) {
  RowBatcher named({{"a", "b"}});
  Status st = named.StartBatch(true, 3);
  EXPECT_EQ(st.message(), "2 names for rows of 3 values");
  RowBatcher fields;
  ASSERT_TRUE(fields.StartBatch(true, 2, std::vector<std::string>{"label", "image"}).ok());
  EXPECT_EQ(fields.column(1).name(), "image");
  EXPECT_TRUE(fields.StartBatch(true, 0).code() == StatusCode::kInvalidArgument);
  RowBatcher empty;
  EXPECT_TRUE(empty.Take().status().code() == StatusCode::kInvalidArgument) << "no rows";
}

TEST(RowBatcherTest, PickledRowsAppendAsTheirPythonValues) {
  RowBatcher b({{"x", "n", "v", "t", "ok"}});
  EXPECT_EQ(b.AppendPickled(FromHex(kTwoRows)), 2);
  EXPECT_EQ(b.AppendPickled(FromHex(kOneMore)), 1);
  EXPECT_EQ(b.rows(), 3u);
  Decoded d = TakeAndDecode(b);
  ASSERT_EQ(d.rows, 3u);
  ASSERT_EQ(d.columns.size(), 5u);
  EXPECT_EQ(Values<float>(d.columns[0]), (std::vector<float>{0.5f, 1.5f, 2.5f}));
  EXPECT_EQ(Values<int64_t>(d.columns[1]), (std::vector<int64_t>{7, -3, 9}));
  EXPECT_EQ(d.columns[2].dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(Values<float>(d.columns[2]), (std::vector<float>{1, 2, 3, 4.5f, 5, 6}));
  EXPECT_EQ(Texts(d.columns[3]), (std::vector<std::string>{"ab", "cd", ""}));
  EXPECT_FALSE(d.columns[3].text) << "b'ab' and 'cd': bytes among text stay bytes";
  EXPECT_EQ(Values<uint8_t>(d.columns[4]), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(RowBatcherTest, PickledNumpyArraysKeepDtypeAndShape) {
  RowBatcher b;
  EXPECT_EQ(b.AppendPickled(FromHex(kArrays)), 2);
  Decoded d = TakeAndDecode(b);
  ASSERT_EQ(d.columns.size(), 1u);
  EXPECT_EQ(d.columns[0].name, "0");
  EXPECT_EQ(d.columns[0].type, ColumnType::kFloat32);
  EXPECT_EQ(d.columns[0].dims, (std::vector<uint64_t>{2, 2, 2}));
  EXPECT_EQ(Values<float>(d.columns[0]), (std::vector<float>{0, 1, 2, 3, 1, 1, 1, 1}));
}

TEST(RowBatcherTest, PicklesOnlyPythonReadsAppendNothing) {
  RowBatcher b({{"x", "n", "v", "t", "ok"}});
  EXPECT_EQ(b.AppendPickled(FromHex(kMixedList)), -1) << "a list of a float and an int";
  EXPECT_EQ(b.AppendPickled("not a pickle"), -1);
  EXPECT_EQ(b.rows(), 0u);
  ASSERT_EQ(b.AppendPickled(FromHex(kTwoRows)), 2);
  // Ints where the batch has floats: Python converts them, so this batch goes there.
  EXPECT_EQ(b.AppendPickled(FromHex(kIntList)), -1);
  EXPECT_EQ(b.AppendPickled(FromHex(kArrays)), -1) << "rows of another structure";
  EXPECT_EQ(b.rows(), 2u);
  const size_t held = b.nbytes();
  EXPECT_EQ(b.AppendPickled(FromHex(kOneMore)), 1);
  EXPECT_GT(b.nbytes(), held);
  // Names for 5 columns, rows of 1: refused, not renamed.
  RowBatcher named({{"x", "n", "v", "t", "ok"}});
  EXPECT_EQ(named.AppendPickled(FromHex(kArrays)), -1);
}

TEST(RowBatcherTest, ANewBatchIsTypedByItsOwnFirstRow) {
  RowBatcher b;
  ASSERT_EQ(b.AppendPickled(FromHex(kArrays)), 2);
  b.Clear();
  ASSERT_TRUE(b.StartBatch(false, 1).ok());
  b.column(0).Start({ColumnShape::kScalar, ColumnType::kBytes, {}});
  b.column(0).PutText("after");
  b.column(0).EndRow();
  b.EndRow();
  Decoded d = TakeAndDecode(b);
  ASSERT_EQ(d.columns.size(), 1u);
  EXPECT_EQ(d.columns[0].type, ColumnType::kBytes);
  EXPECT_EQ(Texts(d.columns[0]), (std::vector<std::string>{"after"}));
}

}  // namespace
}  // namespace sparktf::feed
