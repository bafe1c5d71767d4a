#include "sparktf/record/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace sparktf::crc32c {

// Vectors from RFC 3720 (iSCSI), appendix B.4, plus the classic "123456789".
TEST(Crc32cTest, KnownVectors) {
  std::string zeros(32, '\0'), ones(32, '\xff'), ascending(32, 0), descending(32, 0);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  for (auto fn : {&ExtendPortable, &Extend}) {
    EXPECT_EQ(fn(0, zeros.data(), zeros.size()), 0x8a9136aau);
    EXPECT_EQ(fn(0, ones.data(), ones.size()), 0x62a8ab43u);
    EXPECT_EQ(fn(0, ascending.data(), 32), 0x46dd794eu);
    EXPECT_EQ(fn(0, descending.data(), 32), 0x113fdb5cu);
    EXPECT_EQ(fn(0, "123456789", 9), 0xe3069283u);
    EXPECT_EQ(fn(0, "", 0), 0u);
  }
}

TEST(Crc32cTest, HardwareMatchesPortableOnEveryLengthAndAlignment) {
  if (!HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(42);
  std::string data(600, 0);
  for (auto& c : data) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n + offset <= data.size(); n += 7) {
      ASSERT_EQ(ExtendHardware(0, data.data() + offset, n),
                ExtendPortable(0, data.data() + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
}

TEST(Crc32cTest, ExtendIsIncremental) {
  std::string s = "hello, tfrecord world";
  uint32_t whole = Value(s.data(), s.size());
  uint32_t parts = Extend(Value(s.data(), 5), s.data() + 5, s.size() - 5);
  EXPECT_EQ(whole, parts);
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  for (uint32_t v : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) {
    EXPECT_NE(Mask(v), v);
    EXPECT_EQ(Unmask(Mask(v)), v);
    EXPECT_NE(Mask(Mask(v)), Mask(v));
  }
}

}  // namespace sparktf::crc32c
