#include "sparktf/record/example.h"

#include <gtest/gtest.h>

#include "sparktf/record/testutil_internal.h"

#include <cmath>
#include <limits>

namespace sparktf {
namespace {

using namespace testutil;  // NOLINT(google-build-using-namespace)




// Expected bytes are what TensorFlow 2.21's
// tf.train.Example(...).SerializeToString(deterministic=True) returns.
TEST(ExampleTest, EncodesLikeTensorFlow) {
  Example empty;
  std::string out;
  EncodeExample(empty, &out);
  EXPECT_EQ(Hex(out), "0a00");

  Example one;
  one.features["a"] = Ints({});
  out.clear();
  EncodeExample(one, &out);
  EXPECT_EQ(Hex(out), "0a090a070a016112021a00");

  Example no_kind;
  no_kind.features[""] = Feature{};
  out.clear();
  EncodeExample(no_kind, &out);
  EXPECT_EQ(Hex(out), "0a060a040a001200");

  Example mixed;
  mixed.features["b"] = Ints({1, -1});
  mixed.features["a"] = Floats({1.5f});
  mixed.features["c"] = Bytes({"", "\xff"});
  out.clear();
  EncodeExample(mixed, &out);
  EXPECT_EQ(
      Hex(out),
      "0a330a0d0a0161120812060a040000c03f0a140a0162120f1a0d0a0b01ffffffffffffffffff01"
      "0a0c0a016312070a050a000a01ff");
}

TEST(ExampleTest, RoundTripsExtremeValues) {
  Example ex;
  ex.features["int"] = Ints({0, -1, std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max(), 1LL << 40});
  ex.features["float"] = Floats({std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(), -0.0f, 1e-45f});
  ex.features["bytes"] =
      Bytes({"", std::string("\0\xff\x80", 3), std::string(1000, 'z')});
  ex.features["empty_bytes"] = Bytes({});
  ex.features["empty_floats"] = Floats({});
  std::string out;
  EncodeExample(ex, &out);
  Example back;
  ASSERT_TRUE(DecodeExample(out, &back).ok());
  EXPECT_EQ(back, ex);

  Example nan;
  nan.features["x"] = Floats({std::nanf("")});
  out.clear();
  EncodeExample(nan, &out);
  ASSERT_TRUE(DecodeExample(out, &back).ok());
  EXPECT_TRUE(std::isnan(back.features["x"].float_list[0]));
}

TEST(ExampleTest, DecodesUnpackedLists) {
  // Example{features{feature{key:"k" value{int64_list{value:5 value:-1}}}}} with the
  // int64 values unpacked (field 1 varint), and a float list unpacked (fixed32).
  std::string int64_list = "\x08\x05\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  std::string feature =
      "\x1a" + std::string(1, static_cast<char>(int64_list.size())) + int64_list;
  std::string entry = std::string("\x0a\x01k\x12", 4) +
                      std::string(1, static_cast<char>(feature.size())) + feature;
  std::string features = "\x0a" + std::string(1, static_cast<char>(entry.size())) + entry;
  std::string example =
      "\x0a" + std::string(1, static_cast<char>(features.size())) + features;
  Example ex;
  ASSERT_TRUE(DecodeExample(example, &ex).ok());
  EXPECT_EQ(ex.features["k"].int64_list, (std::vector<int64_t>{5, -1}));

  std::string float_list = Unhex("0d0000803f0d00000040");  // 1.0, 2.0 unpacked
  Feature f;
  FeatureKind kind;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  example_internal::FeatureSinks sinks{&floats, &ints, nullptr, nullptr};
  std::string feat =
      "\x12" + std::string(1, static_cast<char>(float_list.size())) + float_list;
  ASSERT_TRUE(example_internal::DecodeFeatureInto(feat, &kind, sinks).ok());
  EXPECT_EQ(kind, FeatureKind::kFloat);
  EXPECT_EQ(floats, (std::vector<float>{1.0f, 2.0f}));
}

// Found by example_fuzz: an empty packed FloatList (field present, length 0).
TEST(ExampleTest, EmptyPackedFloatListDecodesToNothing) {
  FeatureKind kind;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  example_internal::FeatureSinks sinks{&floats, &ints, nullptr, nullptr};
  ASSERT_TRUE(example_internal::DecodeFeatureInto(Unhex("12020a00"), &kind, sinks).ok());
  EXPECT_EQ(kind, FeatureKind::kFloat);
  EXPECT_TRUE(floats.empty());
}

TEST(ExampleTest, LastOneofMemberWinsAndRepeatsMerge) {
  // int64_list{1}, float_list{2.0}, int64_list{3}, int64_list{4}  ->  int64 [3, 4]
  std::string feat = Unhex("1a020801") + Unhex("1206") + Unhex("0a0400000040") +
                     Unhex("1a020803") + Unhex("1a020804");
  FeatureKind kind;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  example_internal::FeatureSinks sinks{&floats, &ints, nullptr, nullptr};
  ASSERT_TRUE(example_internal::DecodeFeatureInto(feat, &kind, sinks).ok());
  EXPECT_EQ(kind, FeatureKind::kInt64);
  EXPECT_EQ(ints, (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(floats.empty());
}

TEST(ExampleTest, UnknownFieldsAreSkipped) {
  Example ex;
  ex.features["a"] = Ints({7});
  std::string out;
  EncodeExample(ex, &out);
  std::string with_unknown =
      Unhex("1005") + out + Unhex("1d01020304");  // field 2, field 3
  Example back;
  ASSERT_TRUE(DecodeExample(with_unknown, &back).ok());
  EXPECT_EQ(back, ex);
}

TEST(ExampleTest, MalformedInputIsInvalidArgument) {
  Example ex;
  ex.features["feature"] = Floats({1, 2, 3});
  std::string good;
  EncodeExample(ex, &good);
  // Every strict prefix is malformed (a length runs past the end).
  for (size_t n = 1; n < good.size(); ++n) {
    Example back;
    Status st = DecodeExample(good.substr(0, n), &back);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "prefix " << n;
  }
  const std::vector<std::string> bad = {
      Unhex("0b"),                          // start-group wire type
      Unhex("0c"),                          // end-group
      Unhex("0f"),                          // wire type 7
      Unhex("00"),                          // field number 0
      Unhex("0affffffffffffffffff7f"),      // length with 10 continuation bytes
      Unhex("0affffffff0f"),                // 4 GiB declared length, no data
      Unhex("0a040a030a01"),                // entry declares more than Features holds
      Unhex("0a0b0a090a0161120412020a01"),  // packed float length not multiple of 4
  };
  for (const auto& b : bad) {
    Example back;
    EXPECT_EQ(DecodeExample(b, &back).code(), StatusCode::kInvalidArgument) << Hex(b);
  }
}

TEST(ExampleTest, SequenceExampleRoundTrips) {
  SequenceExample se;
  se.context["id"] = Bytes({"seq-1"});
  se.feature_lists["tokens"] = {Ints({1, 2}), Ints({}), Ints({3})};
  se.feature_lists["scores"] = {Floats({0.5f})};
  std::string out;
  EncodeSequenceExample(se, &out);
  SequenceExample back;
  ASSERT_TRUE(DecodeSequenceExample(out, &back).ok());
  EXPECT_EQ(back, se);
  EXPECT_EQ(DecodeSequenceExample(out.substr(0, out.size() - 1), &back).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparktf
