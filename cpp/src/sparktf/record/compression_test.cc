#include "sparktf/record/compression.h"

#include <gtest/gtest.h>

#include <random>

namespace sparktf {
namespace {

std::string Compress(const std::string& data, Compression kind) {
  std::string sink;
  auto out = MakeDeflateStream(MakeStringOutputStream(&sink), kind);
  EXPECT_TRUE(out.ok());
  EXPECT_TRUE((*out)->Write(data).ok());
  EXPECT_TRUE((*out)->Close().ok());
  return sink;
}

Result<std::string> Decompress(const std::string& data, Compression kind) {
  auto in = MakeInflateStream(MakeMemoryInputStream(data, "mem"), kind);
  return ReadAll(in.get());
}

std::string RandomText(size_t n) {
  std::mt19937 rng(7);
  std::string s(n, 0);
  for (auto& c : s) c = static_cast<char>('a' + rng() % 6);
  return s;
}

TEST(CompressionTest, ParseNames) {
  EXPECT_EQ(*ParseCompression(""), Compression::kNone);
  EXPECT_EQ(*ParseCompression("GZIP"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("zlib"), Compression::kZlib);
  EXPECT_EQ(ParseCompression("snappy").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CompressionFromPath("a/part-0.tfrecord.gz"), Compression::kGzip);
  EXPECT_EQ(CompressionFromPath("a/part-0.tfrecord"), Compression::kNone);
}

TEST(CompressionTest, RoundTripsBothKinds) {
  const std::string text = RandomText(1 << 20);
  for (Compression kind : {Compression::kGzip, Compression::kZlib}) {
    std::string packed = Compress(text, kind);
    EXPECT_LT(packed.size(), text.size());
    auto back = Decompress(packed, kind);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, text);
  }
}

TEST(CompressionTest, ConcatenatedGzipMembersReadAsOne) {
  std::string a = Compress("first,", Compression::kGzip);
  std::string b = Compress("second", Compression::kGzip);
  EXPECT_EQ(*Decompress(a + b, Compression::kGzip), "first,second");
}

TEST(CompressionTest, TruncatedStreamIsDataLoss) {
  std::string packed = Compress(RandomText(100000), Compression::kGzip);
  auto back = Decompress(packed.substr(0, packed.size() / 2), Compression::kGzip);
  EXPECT_EQ(back.status().code(), StatusCode::kDataLoss);
}

TEST(CompressionTest, WrongKindIsDataLossWithHint) {
  auto back = Decompress(Compress("hello", Compression::kZlib), Compression::kGzip);
  ASSERT_EQ(back.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(back.status().message().find("try another compression"), std::string::npos);
  back = Decompress("plain text, not compressed at all", Compression::kZlib);
  EXPECT_EQ(back.status().code(), StatusCode::kDataLoss);
}

TEST(CompressionTest, EmptyInputIsEmptyStream) {
  EXPECT_EQ(*Decompress("", Compression::kGzip), "");
}

TEST(CompressionTest, BadLevelRejected) {
  std::string sink;
  auto out = MakeDeflateStream(MakeStringOutputStream(&sink), Compression::kGzip, 11);
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparktf
