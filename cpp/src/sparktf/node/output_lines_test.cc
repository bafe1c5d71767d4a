#include "sparktf/node/output_lines.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sparktf::node {
namespace {

using json = nlohmann::json;

json Take(OutputLines& out, int generation = 0) {
  json j = json::parse(out.TakePayload(generation));
  EXPECT_EQ(j["generation"], generation);
  return j["lines"];
}

TEST(OutputLinesTest, CutsLinesAcrossWritesAndKeepsTheStreamsInOrder) {
  OutputLines out;
  EXPECT_TRUE(out.empty());
  out.Append(OutputLines::kStdout, "ep");
  EXPECT_TRUE(out.empty());  // no line ended yet
  out.Append(OutputLines::kStdout, "och 1\nepoch");
  out.Append(OutputLines::kStderr, "warning\r\n");
  out.Append(OutputLines::kStdout, " 2\n\n");
  EXPECT_EQ(out.pending_bytes(), 21u);
  EXPECT_EQ(Take(out, 3), json::parse(R"([["stdout","epoch 1"],["stderr","warning"],
                                          ["stdout","epoch 2"],["stdout",""]])"));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(out.pending_bytes(), 0u);
}

TEST(OutputLinesTest, AProgressBarIsSentInItsLastStateAndAPartialLineAtTheEnd) {
  OutputLines out;
  out.Append(OutputLines::kStdout, "1/3 [=>  ]\r2/3 [==> ]\r");
  out.Append(OutputLines::kStdout, "\r3/3 [===]\nlast words");
  out.Append(OutputLines::kStderr, "cut\r");
  out.FinishPartial();
  EXPECT_EQ(Take(out), json::parse(R"([["stdout","3/3 [===]"],["stdout","last words"],
                                       ["stderr","cut"]])"));
}

TEST(OutputLinesTest, LongLinesAreCutAndTooMuchOutputIsDroppedAndCounted) {
  OutputLines out(/*max_line=*/4, /*max_pending=*/13);
  out.Append(OutputLines::kStdout, "abcdefghij\n");  // abcd efgh ij
  out.Append(OutputLines::kStdout, "klm\nnop\n");     // klm fits (10 + 3), nop does not
  json lines = Take(out);
  ASSERT_EQ(lines.size(), 5u) << lines;
  EXPECT_EQ(lines[0], json::parse(R"(["stdout","abcd"])"));
  EXPECT_EQ(lines[2], json::parse(R"(["stdout","ij"])"));
  EXPECT_EQ(lines[3], json::parse(R"(["stdout","klm"])"));
  EXPECT_EQ(lines[4][0], "stderr");
  EXPECT_NE(lines[4][1].get<std::string>().find("1 lines of this node's output were dropped"),
            std::string::npos)
      << lines[4];
  out.Append(OutputLines::kStdout, "ok\n");  // the count starts again after a take
  EXPECT_EQ(Take(out), json::parse(R"([["stdout","ok"]])"));
}

TEST(OutputLinesTest, InvalidUtf8IsReplacedNotRefused) {
  OutputLines out;
  out.Append(OutputLines::kStderr, "bad \xff\xfe byte\n");
  json lines = Take(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][1], "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
}

}  // namespace
}  // namespace sparktf::node
