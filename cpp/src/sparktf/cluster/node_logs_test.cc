#include "sparktf/cluster/node_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sparktf::cluster {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NodeLogsTest, KeepsAFilePerNodeAndGenerationAndEchoesPrefixedLines) {
  char tmpl[] = "/tmp/sparktf-node-logs-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/logs";  // created on the first line
  int echo[2];
  ASSERT_EQ(::pipe(echo), 0);
  {
    NodeLogs logs({dir, echo[1]});
    EXPECT_EQ(logs.PathOf("worker:1", 0), dir + "/worker-1.log");
    EXPECT_EQ(logs.PathOf("chief:0", 2), dir + "/chief-0.gen2.log");
    logs.Write({"worker:1", 0, "stdout", "step 1"});
    logs.Write({"chief:0", 0, "stderr", "warn"});
    logs.Write({"worker:1", 0, "stderr", "step 2"});
    logs.Write({"worker:1", 1, "stdout", "again"});
    EXPECT_EQ(logs.last_error(), "");
  }
  ::close(echo[1]);
  std::string echoed(4096, '\0');
  echoed.resize(static_cast<size_t>(::read(echo[0], echoed.data(), echoed.size())));
  ::close(echo[0]);
  EXPECT_EQ(echoed, "[worker:1] step 1\n[chief:0] warn\n[worker:1] step 2\n[worker:1] again\n");
  EXPECT_EQ(Slurp(dir + "/worker-1.log"), "step 1\nstep 2\n");
  EXPECT_EQ(Slurp(dir + "/chief-0.log"), "warn\n");
  EXPECT_EQ(Slurp(dir + "/worker-1.gen1.log"), "again\n");
  std::system(("rm -rf " + std::string(tmpl)).c_str());
}

TEST(NodeLogsTest, AnUnwritableDirectoryIsReportedNotFatal) {
  NodeLogs logs({"/proc/sparktf-cannot-be-here", -1});
  logs.Write({"worker:0", 0, "stdout", "x"});
  logs.Write({"worker:0", 0, "stdout", "y"});
  EXPECT_NE(logs.last_error().find("/proc/sparktf-cannot-be-here"), std::string::npos)
      << logs.last_error();
  NodeLogs none({"", -1});
  EXPECT_EQ(none.PathOf("worker:0", 0), "");
  none.Write({"worker:0", 0, "stdout", "x"});
  EXPECT_EQ(none.last_error(), "");
}

}  // namespace
}  // namespace sparktf::cluster
