#include "sparktf/record/columnar.h"

#include <gtest/gtest.h>

#include "sparktf/record/testutil_internal.h"

#include "sparktf/record/columnar_encoder.h"

namespace sparktf {
namespace {

using namespace testutil;  // NOLINT(google-build-using-namespace)

std::string Encode(const FeatureMap& m) {
  Example ex;
  ex.features = m;
  std::string out;
  EncodeExample(ex, &out);
  return out;
}


ColumnSpec Fixed(std::string name, DType dtype, std::vector<int64_t> shape = {}) {
  ColumnSpec s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.shape = std::move(shape);
  return s;
}
ColumnSpec Var(std::string name, DType dtype) {
  ColumnSpec s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.var_len = true;
  return s;
}

TEST(ColumnarTest, DecodesFixedAndVariableColumns) {
  auto dec = ColumnarDecoder::Make(
      {Fixed("label", DType::kInt64), Fixed("pixels", DType::kFloat32, {2, 2}),
       Var("tags", DType::kBytes), Var("ids", DType::kInt64)});
  ASSERT_TRUE(dec.ok());
  ASSERT_TRUE(dec->Append(Encode({{"label", Ints({3})},
                                  {"pixels", Floats({1, 2, 3, 4})},
                                  {"tags", Bytes({"a", "bc"})},
                                  {"ids", Ints({})},
                                  {"ignored", Floats({9})}}))
                  .ok());
  ASSERT_TRUE(dec->Append(Encode({{"label", Ints({-7})},
                                  {"pixels", Floats({5, 6, 7, 8})},
                                  {"tags", Bytes({""})}}))
                  .ok());
  EXPECT_EQ(dec->num_rows(), 2u);
  auto cols = dec->Finish();
  EXPECT_EQ(cols[0].ints, (std::vector<int64_t>{3, -7}));
  EXPECT_EQ(cols[1].floats, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(cols[2].bytes_data, "abc");
  EXPECT_EQ(cols[2].bytes_offsets, (std::vector<int64_t>{0, 1, 3, 3}));
  EXPECT_EQ(cols[2].row_splits, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(cols[3].row_splits, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(cols[3].present, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(dec->num_rows(), 0u);
}

TEST(ColumnarTest, DefaultsFillMissingFixedFeatures) {
  ColumnSpec s = Fixed("x", DType::kFloat32, {3});
  s.has_default = true;
  s.default_floats = {-1};
  auto dec = ColumnarDecoder::Make({s});
  ASSERT_TRUE(dec->Append(Encode({})).ok());
  ASSERT_TRUE(dec->Append(Encode({{"x", Floats({})}})).ok());  // empty list = missing
  auto cols = dec->Finish();
  EXPECT_EQ(cols[0].floats, std::vector<float>(6, -1));
}

TEST(ColumnarTest, ErrorsNameRowAndFeatureAndRollBack) {
  auto dec =
      ColumnarDecoder::Make({Fixed("a", DType::kInt64), Var("b", DType::kFloat32)});
  ASSERT_TRUE(dec->Append(Encode({{"a", Ints({1})}, {"b", Floats({1})}})).ok());

  Status missing = dec->Append(Encode({{"b", Floats({2})}}));
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("record 1"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("'a' is required"), std::string::npos);

  Status wrong_type = dec->Append(Encode({{"a", Floats({1})}}));
  EXPECT_NE(wrong_type.message().find("float_list but the schema expects int64"),
            std::string::npos)
      << wrong_type.message();
  Status wrong_len = dec->Append(Encode({{"a", Ints({1, 2})}}));
  EXPECT_NE(wrong_len.message().find("has 2 values"), std::string::npos);
  EXPECT_EQ(dec->Append("\x0a\x05").code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(dec->Append(Encode({{"a", Ints({2})}, {"b", Floats({5, 6})}})).ok());
  auto cols = dec->Finish();
  EXPECT_EQ(cols[0].ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cols[1].floats, (std::vector<float>{1, 5, 6}));
  EXPECT_EQ(cols[1].row_splits, (std::vector<int64_t>{0, 1, 3}));
}

TEST(ColumnarTest, RepeatedKeyLastWins) {
  // Two map entries for "a" in one Features message.
  std::string first = Encode({{"a", Ints({1, 2})}});
  std::string second = Encode({{"a", Ints({3})}});
  std::string both = first + second;  // Example.features twice: maps merge
  auto dec = ColumnarDecoder::Make({Var("a", DType::kInt64)});
  ASSERT_TRUE(dec->Append(both).ok());
  auto cols = dec->Finish();
  EXPECT_EQ(cols[0].ints, (std::vector<int64_t>{3}));
}

TEST(ColumnarTest, SchemaChecks) {
  EXPECT_FALSE(
      ColumnarDecoder::Make({Var("a", DType::kInt64), Var("a", DType::kInt64)}).ok());
  EXPECT_FALSE(ColumnarDecoder::Make({Var("", DType::kInt64)}).ok());
  ColumnSpec bad_default = Fixed("x", DType::kInt64, {3});
  bad_default.has_default = true;
  bad_default.default_ints = {1, 2};
  EXPECT_FALSE(ColumnarDecoder::Make({bad_default}).ok());
}

TEST(SchemaInferrerTest, InfersFixedAndVariable) {
  SchemaInferrer inf;
  ASSERT_TRUE(inf.Append(Encode({{"label", Ints({1})},
                                 {"vec", Floats({1, 2, 3})},
                                 {"words", Bytes({"a"})},
                                 {"rare", Ints({1})}}))
                  .ok());
  ASSERT_TRUE(inf.Append(Encode({{"label", Ints({0})},
                                 {"vec", Floats({4, 5, 6})},
                                 {"words", Bytes({"a", "b"})}}))
                  .ok());
  auto schema = inf.Schema();
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->size(), 4u);
  const auto& s = *schema;  // sorted by name: label, rare, vec, words
  EXPECT_EQ(s[0].name, "label");
  EXPECT_FALSE(s[0].var_len);
  EXPECT_TRUE(s[0].shape.empty());
  EXPECT_EQ(s[0].dtype, DType::kInt64);
  EXPECT_TRUE(s[1].var_len);  // missing in one record
  EXPECT_EQ(s[2].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(s[2].dtype, DType::kFloat32);
  EXPECT_TRUE(s[3].var_len);
  EXPECT_EQ(s[3].dtype, DType::kBytes);
}

TEST(SchemaInferrerTest, ConflictingKindsAreAnError) {
  SchemaInferrer inf;
  ASSERT_TRUE(inf.Append(Encode({{"x", Ints({1})}})).ok());
  ASSERT_TRUE(inf.Append(Encode({{"x", Floats({1})}})).ok());
  auto schema = inf.Schema();
  EXPECT_EQ(schema.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(schema.status().message().find("'x'"), std::string::npos);
}

}  // namespace
}  // namespace sparktf

namespace sparktf {
namespace {

TEST(ColumnarEncoderTest, EncodesLikeEncodeExampleAndSkipsNulls) {
  const std::vector<int64_t> ids = {5, 6, 7};
  const std::vector<float> vec = {1, 2, 3};
  const std::vector<int64_t> vec_rows = {0, 2, 2, 3};
  const std::string words = "abcde";
  const std::vector<int64_t> word_offsets = {0, 2, 5};
  const std::vector<uint8_t> word_valid = {1, 0, 1};
  std::vector<InputColumn> cols(3);
  cols[0] = {"words",          FeatureKind::kBytes, nullptr, nullptr,
             words.data(),     word_offsets.data(), 3,       nullptr,
             word_valid.data()};
  cols[0].num_values = 2;  // rows 0 and 2 use values 0, 1 by row offsets below
  static const std::vector<int64_t> word_rows = {0, 1, 1, 2};
  cols[0].row_offsets = word_rows.data();
  cols[1] = {
      "id",   FeatureKind::kInt64, nullptr, ids.data(), nullptr, nullptr, 3, nullptr,
      nullptr};
  cols[2] = {"vec", FeatureKind::kFloat, vec.data(), nullptr, nullptr, nullptr,
             3,     vec_rows.data(),     nullptr};
  std::vector<std::string> got;
  ASSERT_TRUE(EncodeColumns(cols, 3, [&](std::string_view s) {
                got.emplace_back(s);
                return Status::OK();
              }).ok());
  ASSERT_EQ(got.size(), 3u);
  Example e0, e1, e2;
  e0.features["id"] = Ints({5});
  e0.features["vec"] = Floats({1, 2});
  e0.features["words"] = Bytes({"ab"});
  e1.features["id"] = Ints({6});
  e1.features["vec"] = Floats({});
  e2.features["id"] = Ints({7});
  e2.features["vec"] = Floats({3});
  e2.features["words"] = Bytes({"cde"});
  std::string want0, want1, want2;
  EncodeExample(e0, &want0);
  EncodeExample(e1, &want1);
  EncodeExample(e2, &want2);
  EXPECT_EQ(got[0], want0);
  EXPECT_EQ(got[1], want1);  // null words left out, empty vec kept
  EXPECT_EQ(got[2], want2);
}

TEST(ColumnarEncoderTest, RejectsBadOffsets) {
  const std::vector<int64_t> ids = {1, 2};
  const std::vector<int64_t> rows = {0, 3, 2};
  InputColumn c{"x", FeatureKind::kInt64, nullptr, ids.data(), nullptr, nullptr,
                2,   rows.data(),         nullptr};
  Status st = EncodeColumns({c}, 2, [](std::string_view) { return Status::OK(); });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("row offsets out of range at row 0"), std::string::npos);
  InputColumn short_col{
      "y",    FeatureKind::kInt64, nullptr, ids.data(), nullptr, nullptr, 1, nullptr,
      nullptr};
  EXPECT_FALSE(
      EncodeColumns({short_col}, 2, [](std::string_view) { return Status::OK(); }).ok());
}

}  // namespace
}  // namespace sparktf
