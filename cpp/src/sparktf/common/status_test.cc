#include "sparktf/common/status.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "sparktf/common/result.h"

namespace sparktf {

TEST(StatusTest, OkHasNoMessage) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.ToString(), "OK");
}

TEST(StatusTest, ContextChainsCauses) {
  Status st = Status::FromErrno("open /x", ENOENT).WithContext("read shard-0");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "read shard-0: open /x: No such file or directory");
  EXPECT_EQ(Status::FromErrno("connect", ECONNREFUSED).code(), StatusCode::kUnavailable);
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(*out, Half(h));
  return Status::OK();
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_EQ(Quarter(6, &out).code(), StatusCode::kInvalidArgument);
}

}  // namespace sparktf
