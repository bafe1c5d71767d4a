#include "sparktf/feed/pickle_rows.h"

#include <gtest/gtest.h>

#include <cstring>

#include "sparktf/feed/testutil_internal.h"

namespace sparktf::feed {
namespace {

using testutil::FromHex;

using Kind = PickleValue::Kind;

// Pickles written by CPython 3.11 (pickle.dumps(rows, 5), numpy 2).
// [([0.5, -1.5], 7, True, 'ab', b'cd', None), ([2.0, 3.0], -70000, False, 'é', b'', None)]
const char* kScalars =
    "80059554000000000000005d9428285d9428473fe000000000000047bff8000000000000654b07888c0261629443"
    "026364944e7494285d9428474000000000000000474008000000000000654a90eefeff898c02c3a9944300944e74"
    "94652e";
// [(np.array([1, 2, 3], np.float32), 1), (np.array([4, 5, 6], np.float32), 300)]
const char* kNumpy =
    "800595b2000000000000005d94288c136e756d70792e5f636f72652e6e756d65726963948c0b5f66726f6d627566"
    "66657294939428960c000000000000000000803f0000004000004040948c056e756d7079948c0564747970659493"
    "948c02663494898887945294284b038c013c944e4e4e4affffffff4affffffff4b007494624b0385948c01439474"
    "9452944b018694680328960c00000000000000000080400000a0400000c04094680a4b038594680e749452944d2c"
    "018694652e";

TEST(PickledRowsTest, ReadsNumbersTextAndLists) {
  const std::string p = FromHex(kScalars);
  PickledRows r;
  ASSERT_TRUE(r.Parse(p).ok());
  ASSERT_EQ(r.rows(), 2u);
  const auto row0 = r.Items(r.row(0));
  ASSERT_EQ(r.row(0).kind, Kind::kTuple);
  ASSERT_EQ(row0.size(), 6u);
  ASSERT_EQ(row0[0].kind, Kind::kList);
  EXPECT_EQ(r.Items(row0[0])[0].f, 0.5);
  EXPECT_EQ(r.Items(row0[0])[1].f, -1.5);
  EXPECT_EQ(row0[1].kind, Kind::kInt);
  EXPECT_EQ(row0[1].i, 7);
  EXPECT_EQ(row0[2].kind, Kind::kBool);
  EXPECT_EQ(row0[2].i, 1);
  EXPECT_EQ(row0[3].kind, Kind::kStr);
  EXPECT_EQ(r.Text(row0[3]), "ab");
  EXPECT_EQ(row0[4].kind, Kind::kBytes);
  EXPECT_EQ(r.Text(row0[4]), "cd");
  EXPECT_EQ(row0[5].kind, Kind::kNone);
  const auto row1 = r.Items(r.row(1));
  EXPECT_EQ(row1[1].i, -70000);
  EXPECT_EQ(r.Text(row1[3]), "\xc3\xa9");
  EXPECT_EQ(r.Items(row1[0])[1].f, 3.0);
}

TEST(PickledRowsTest, ReadsNumpyArraysAsViewsOfThePickle) {
  const std::string p = FromHex(kNumpy);
  PickledRows r;
  ASSERT_TRUE(r.Parse(p).ok()) << r.Parse(p).ToString();
  ASSERT_EQ(r.rows(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto row = r.Items(r.row(i));
    ASSERT_EQ(row[0].kind, Kind::kArray);
    const PickledArray& a = r.Array(row[0]);
    EXPECT_EQ(a.type, ColumnType::kFloat32);
    EXPECT_EQ(a.shape, std::vector<uint64_t>{3});
    float v[3];
    ASSERT_EQ(a.data.size(), sizeof(v));
    std::memcpy(v, a.data.data(), sizeof(v));
    EXPECT_EQ(v[2], i == 0 ? 3.0f : 6.0f);
    EXPECT_GE(a.data.data(), p.data());  // not copied
    EXPECT_LT(a.data.data(), p.data() + p.size());
  }
  EXPECT_EQ(r.Items(r.row(1))[1].i, 300);
}

TEST(PickledRowsTest, LongsWithinInt64) {
  // [(2**40, -2**40, 2**63 - 1, -2**63)]
  PickledRows r;
  ASSERT_TRUE(r.Parse(FromHex("8005952b000000000000005d94288a060000000000018a060000000000ff8a08ffffffffffff"
                          "ff7f8a0800000000000000807494612e"))
                  .ok());
  const auto row = r.Items(r.row(0));
  EXPECT_EQ(row[0].i, int64_t{1} << 40);
  EXPECT_EQ(row[1].i, -(int64_t{1} << 40));
  EXPECT_EQ(row[2].i, INT64_MAX);
  EXPECT_EQ(row[3].i, INT64_MIN);
}

TEST(PickledRowsTest, WhatOnlyPythonReadsIsUnimplemented) {
  const char* cases[] = {
      // [({'a': 1},)]
      "8005950f000000000000005d947d948c0161944b01738594612e",
      // [(2**64,)]
      "80059511000000000000005d948a090000000000000000018594612e",
      // [np.zeros(2, '>f4')]
      "8005957f000000000000005d948c136e756d70792e5f636f72652e6e756d65726963948c0b5f66726f6d62756666"
      "6572949394289608000000000000000000000000000000948c056e756d7079948c05647479706594939"
      "48c02663494898887945294284b038c013e944e4e4e4affffffff4affffffff4b007494624b0285948c0143947494"
      "5294612e",
      // [np.zeros((2, 2), np.float32, order='F')]
      "80059589000000000000005d948c136e756d70792e5f636f72652e6e756d65726963948c0b5f66726f6d62756666"
      "65729493942896100000000000000000000000000000000000000000000000948c056e756d7079948c056474797065"
      "9493948c02663494898887945294284b038c013c944e4e4e4affffffff4affffffff4b007494624b024b0286948c01"
      "469474945294612e",
  };
  PickledRows r;
  for (const char* hex : cases) {
    Status st = r.Parse(FromHex(hex));
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << hex << ": " << st.ToString();
    EXPECT_EQ(r.rows(), 0u);
  }
}

TEST(PickledRowsTest, MalformedInputIsRejected) {
  const std::string p = FromHex(kNumpy);
  PickledRows r;
  for (size_t n = 0; n < p.size(); ++n) {  // every truncation
    Status st = r.Parse(std::string_view(p).substr(0, n));
    EXPECT_FALSE(st.ok()) << n;
  }
  EXPECT_EQ(r.Parse(FromHex("80055d94682a2e")).code(), StatusCode::kInvalidArgument);  // GET 42
  EXPECT_EQ(r.Parse(FromHex("8005652e")).code(), StatusCode::kInvalidArgument);        // APPENDS, no MARK
  EXPECT_EQ(r.Parse(FromHex("80054e4e2e")).code(), StatusCode::kInvalidArgument);      // two left at STOP
}

}  // namespace
}  // namespace sparktf::feed
