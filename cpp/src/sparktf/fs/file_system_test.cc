#include "sparktf/fs/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sparktf/fs/output_committer.h"
#include "sparktf/fs/s3_file_system_internal.h"
#include "sparktf/fs/testutil_internal.h"
#include "sparktf/record/record_reader.h"
#include "sparktf/record/record_writer.h"

namespace sparktf {
namespace {

using testing::MemoryFileSystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sparktf_fs_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Registers a MemoryFileSystem as "mem://" for one test.
class MemFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<MemoryFileSystem>();
    FileSystemRegistry::Default().Register(
        "mem", [fs = fs_](const std::string&) -> Result<std::shared_ptr<FileSystem>> {
          return std::shared_ptr<FileSystem>(fs);
        });
  }
  void TearDown() override { FileSystemRegistry::Default().Unregister("mem"); }
  std::shared_ptr<MemoryFileSystem> fs_;
};

TEST(UriTest, ParsesSchemesAuthoritiesAndBarePaths) {
  auto p = ParseUri("hdfs://nn:9000/a/b");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "hdfs");
  EXPECT_EQ(p->authority, "nn:9000");
  EXPECT_EQ(p->path, "/a/b");
  p = ParseUri("hdfs:///a");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->authority, "");
  EXPECT_EQ(p->path, "/a");
  p = ParseUri("S3://bucket");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "s3");
  EXPECT_EQ(p->path, "/");
  p = ParseUri("rel/x:y");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "");
  EXPECT_EQ(p->path, "rel/x:y");
  EXPECT_FALSE(ParseUri("").ok());
}

TEST(UriTest, JoinParentAndBaseName) {
  EXPECT_EQ(JoinUri("hdfs:///d", "x"), "hdfs:///d/x");
  EXPECT_EQ(JoinUri("hdfs:///d/", "/x"), "hdfs:///d/x");
  EXPECT_EQ(JoinUri("s3://b", "k"), "s3://b/k");
  EXPECT_EQ(JoinUri("/", "x"), "/x");
  EXPECT_EQ(JoinUri("hdfs:///", "tmp"), "hdfs:///tmp");
  EXPECT_EQ(JoinUri("hdfs://nn:1/", "tmp"), "hdfs://nn:1/tmp");
  EXPECT_EQ(JoinUri("hdfs://nn:1", "tmp"), "hdfs://nn:1/tmp");
  EXPECT_EQ(JoinUri("rel", "x"), "rel/x");
  EXPECT_EQ(JoinUri("s3el://", "x"), "s3el:///x");  // found by uri_fuzz
  EXPECT_EQ(UriParent("hdfs:///d/x"), "hdfs:///d");
  EXPECT_EQ(UriParent("hdfs:///x"), "hdfs:///");
  EXPECT_EQ(UriParent("s3://b/k"), "s3://b");
  EXPECT_EQ(UriParent("/x"), "/");
  EXPECT_EQ(UriParent("x"), ".");
  EXPECT_EQ(UriBaseName("s3://b/d/part-1"), "part-1");
  EXPECT_EQ(UriBaseName("/d/"), "d");
}

TEST(RegistryTest, UnknownSchemeListsTheSupportedOnes) {
  auto fs = FileSystemRegistry::Default().ForUri("gs://bucket/x");
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = fs.status().message();
  EXPECT_NE(msg.find("gs://bucket/x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hdfs://"), std::string::npos) << msg;
  EXPECT_NE(msg.find("s3://"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file://"), std::string::npos) << msg;
}

TEST(RegistryTest, FileUrisAndBarePathsAreTheSameLocalFiles) {
  TempDir dir;
  const std::string path = dir.path() + "/f";
  std::ofstream(path) << "hello";
  auto a = StatPath(path);
  auto b = StatPath("file://" + path);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size, 5);
  EXPECT_EQ(b->size, 5);
  EXPECT_EQ(b->uri, "file://" + path);
  EXPECT_FALSE(StatPath("file://otherhost/x").ok());
}

TEST(LocalFileSystemTest, NothingIsVisibleBeforeCommitAndAbortLeavesNothing) {
  TempDir dir;
  const std::string path = dir.path() + "/out.bin";
  {
    auto w = OpenOutputFile(path);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write("abc").ok());
    EXPECT_FALSE(std::filesystem::exists(path));
    ASSERT_TRUE((*w)->Close().ok());
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  {
    auto w = OpenOutputFile(dir.path() + "/aborted");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("xyz").ok());
    ASSERT_TRUE((*w)->Abort().ok());
  }
  {
    auto w = OpenOutputFile(dir.path() + "/dropped");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("xyz").ok());
  }  // destroyed without Close
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"out.bin"});
}

TEST(LocalFileSystemTest, CommitReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.path() + "/f";
  std::ofstream(path) << "old contents";
  auto w = OpenOutputFile(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("new").ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto in = OpenInputFile(path);
  ASSERT_TRUE(in.ok());
  auto all = ReadAll(in->get());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, "new");
}

TEST(LocalFileSystemTest, ReadAtDoesNotMoveThePosition) {
  TempDir dir;
  std::ofstream(dir.path() + "/f") << "0123456789";
  auto in = OpenInputFile(dir.path() + "/f");
  ASSERT_TRUE(in.ok());
  char buf[4];
  auto got = (*in)->ReadAt(6, buf, 4);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "6789");
  got = (*in)->ReadAt(8, buf, 4);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "89");
  got = (*in)->Read(buf, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(buf, *got), "012");
}

TEST(LocalFileSystemTest, ErrorsNameThePathAndTheirKind) {
  TempDir dir;
  auto missing = OpenInputFile(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.path() + "/nope"), std::string::npos);
  auto is_dir = OpenInputFile(dir.path());
  EXPECT_EQ(is_dir.status().code(), StatusCode::kInvalidArgument);
  if (::geteuid() != 0) {  // root reads everything
    std::ofstream(dir.path() + "/secret") << "x";
    ::chmod((dir.path() + "/secret").c_str(), 0);
    EXPECT_EQ(OpenInputFile(dir.path() + "/secret").status().code(),
              StatusCode::kPermissionDenied);
  }
}

TEST_F(MemFsTest, GlobMatchesEachComponentAndSortsByName) {
  for (const char* k : {"mem://b/d/part-2", "mem://b/d/part-0", "mem://b/d/x-1",
                        "mem://b/e/part-9", "mem://b/d/sub/part-5"}) {
    fs_->Put(k, "data");
  }
  auto m = Glob("mem://b/d/part-*");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, (std::vector<std::string>{"mem://b/d/part-0", "mem://b/d/part-2"}));
  m = Glob("mem://b/*/part-[0-8]");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (std::vector<std::string>{"mem://b/d/part-0", "mem://b/d/part-2"}));
  m = Glob("mem://b/?/sub/part-5");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (std::vector<std::string>{"mem://b/d/sub/part-5"}));
  fs_->Put("mem:///root/part-1", "x");  // no authority, as in hdfs:///...
  m = Glob("mem:///root/part-*");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (std::vector<std::string>{"mem:///root/part-1"}));
  m = Glob("mem://b/nothing/*");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->empty());
}

TEST_F(MemFsTest, ExpandPathsSkipsBookkeepingAndReportsMissingPaths) {
  for (const char* k : {"mem://b/out/part-1", "mem://b/out/part-0", "mem://b/out/_SUCCESS",
                        "mem://b/out/.part-2.tmp", "mem://b/out/_temporary/0/part-3"}) {
    fs_->Put(k, "x");
  }
  auto files = ExpandPaths({"mem://b/out"});
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{"mem://b/out/part-0", "mem://b/out/part-1"}));
  files = ExpandPaths({"mem://b/out/part-*", "mem://b/out/_SUCCESS"});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 3u);
  auto missing = ExpandPaths({"mem://b/none"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto no_match = ExpandPaths({"mem://b/out/zz-*"});
  EXPECT_EQ(no_match.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_match.status().message().find("mem://b/out/zz-*"), std::string::npos);
}

TEST_F(MemFsTest, RecordsRoundTripThroughAnyRegisteredFileSystem) {
  RecordWriterOptions wo;
  wo.compression = Compression::kGzip;
  auto w = RecordWriter::Open("mem://b/r.tfrecord.gz", wo);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*w)->Write("record-" + std::to_string(i)).ok());
  EXPECT_TRUE(fs_->files.empty());  // nothing visible before commit
  ASSERT_TRUE((*w)->Close().ok());
  RecordReaderOptions ro;
  ro.compression = Compression::kGzip;
  auto r = RecordReader::Open("mem://b/r.tfrecord.gz", ro);
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  int n = 0;
  Status st;
  while ((st = (*r)->ReadRecord(&rec)).ok()) {
    EXPECT_EQ(rec, "record-" + std::to_string(n));
    ++n;
  }
  EXPECT_TRUE(st.IsOutOfRange()) << st.ToString();
  EXPECT_EQ(n, 100);
}

TEST_F(MemFsTest, ReadFailuresReachTheRecordReaderWithTheUri) {
  std::string data;
  for (int i = 0; i < 50; ++i) AppendFramedRecord(std::string(100, 'a'), &data);
  fs_->Put("mem://b/f", data);
  fs_->fail_reads_of = "mem://b/f";
  fs_->fail_after_ = 3000;
  RecordReaderOptions ro;
  ro.buffer_size = 1024;
  auto r = RecordReader::Open("mem://b/f", ro);
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  Status st;
  int n = 0;
  while ((st = (*r)->ReadRecord(&rec)).ok()) ++n;
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("mem://b/f"), std::string::npos);
  EXPECT_GT(n, 0);
  EXPECT_LT(n, 50);
}

TEST(S3ConfigTest, EnvironmentWinsOverProfileFiles) {
  TempDir dir;
  std::ofstream(dir.path() + "/credentials")
      << "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n"
      << "[other]\naws_access_key_id=OTHERKEY\naws_secret_access_key=OTHERSECRET\n";
  std::ofstream(dir.path() + "/config")
      << "[profile other]\nregion = eu-west-1\nendpoint_url = http://127.0.0.1:9999\n";
  std::map<std::string, std::string> env{
      {"AWS_SHARED_CREDENTIALS_FILE", dir.path() + "/credentials"},
      {"AWS_CONFIG_FILE", dir.path() + "/config"}};
  auto c = S3ConfigFromEnvironment(env, "/nonexistent");
  EXPECT_EQ(c["aws_access_key_id"], "FILEKEY");
  EXPECT_EQ(c["aws_secret_access_key"], "FILESECRET");
  EXPECT_EQ(c["aws_region"], "us-east-1");
  EXPECT_EQ(c.count("aws_endpoint"), 0u);

  env["AWS_PROFILE"] = "other";
  c = S3ConfigFromEnvironment(env, "/nonexistent");
  EXPECT_EQ(c["aws_access_key_id"], "OTHERKEY");
  EXPECT_EQ(c["aws_region"], "eu-west-1");
  EXPECT_EQ(c["aws_endpoint"], "http://127.0.0.1:9999");
  EXPECT_EQ(c["aws_allow_http"], "true");

  env["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  env["AWS_REGION"] = "ap-south-1";
  env["AWS_ENDPOINT_URL"] = "https://s3.example.test";
  c = S3ConfigFromEnvironment(env, "/nonexistent");
  EXPECT_EQ(c["aws_access_key_id"], "ENVKEY");
  EXPECT_EQ(c["aws_secret_access_key"], "ENVSECRET");
  EXPECT_EQ(c["aws_region"], "ap-south-1");
  EXPECT_EQ(c["aws_endpoint"], "https://s3.example.test");
  EXPECT_EQ(c.count("aws_allow_http"), 0u);
}

TEST(S3ConfigTest, NoCredentialsWithMetadataDisabledMeansUnsignedRequests) {
  auto c = S3ConfigFromEnvironment({{"AWS_EC2_METADATA_DISABLED", "true"}}, "/nonexistent");
  EXPECT_EQ(c["aws_skip_signature"], "true");
  c = S3ConfigFromEnvironment({}, "/nonexistent");
  EXPECT_EQ(c.count("aws_skip_signature"), 0u);
}

}  // namespace
}  // namespace sparktf

namespace sparktf {
namespace {

class CommitterTest : public MemFsTest {
 protected:
  // One attempt writes its file through the committer.
  void WriteAttempt(const std::string& job, int part, int attempt, const std::string& data) {
    auto w = OutputCommitter::OpenTaskAttemptFile("mem://b/out", job, part, attempt,
                                                  "part-" + std::to_string(part));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write(data).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  std::vector<std::string> Keys() {
    std::vector<std::string> out;
    for (const auto& [k, _] : fs_->files) out.push_back(k);
    return out;
  }
};

TEST_F(CommitterTest, OnlyTheWinningAttemptsBecomeVisible) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->SetupJob().ok());
  WriteAttempt("job1", 0, 0, "a0");
  WriteAttempt("job1", 1, 0, "partial");  // failed attempt: Spark does not report it
  WriteAttempt("job1", 1, 1, "b1");
  // What the killed process of an earlier, failed job's attempt left.
  fs_->Put(OutputCommitter::TaskAttemptUri("mem://b/out", "job0", 5, 0, "part-5"), "z");
  auto finals = c->CommitJob({OutputCommitter::TaskAttemptUri("mem://b/out", "job1", 0, 0,
                                                              "part-0"),
                              OutputCommitter::TaskAttemptUri("mem://b/out", "job1", 1, 1,
                                                              "part-1")});
  ASSERT_TRUE(finals.ok()) << finals.status().ToString();
  EXPECT_EQ(*finals, (std::vector<std::string>{"mem://b/out/part-0", "mem://b/out/part-1"}));
  EXPECT_EQ(Keys(), (std::vector<std::string>{"mem://b/out/_SUCCESS", "mem://b/out/part-0",
                                              "mem://b/out/part-1"}));
  EXPECT_EQ(fs_->files["mem://b/out/part-1"], "b1");
}

TEST_F(CommitterTest, AbortLeavesNothingAndExistingOutputIsRefusedUnlessOverwritten) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok() && c->SetupJob().ok());
  WriteAttempt("job1", 0, 0, "a0");
  ASSERT_TRUE(c->AbortJob().ok());
  EXPECT_TRUE(Keys().empty());

  fs_->Put("mem://b/out/part-9", "old");
  auto refused = OutputCommitter::Make("mem://b/out", "job2", WriteMode::kErrorIfExists);
  ASSERT_TRUE(refused.ok());
  Status st = refused->SetupJob();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("overwrite"), std::string::npos);

  auto over = OutputCommitter::Make("mem://b/out", "job3", WriteMode::kOverwrite);
  ASSERT_TRUE(over.ok() && over->SetupJob().ok());
  WriteAttempt("job3", 0, 0, "new");
  ASSERT_TRUE(
      over->CommitJob({OutputCommitter::TaskAttemptUri("mem://b/out", "job3", 0, 0, "part-0")})
          .ok());
  EXPECT_EQ(Keys(), (std::vector<std::string>{"mem://b/out/_SUCCESS", "mem://b/out/part-0"}));
}

TEST_F(CommitterTest, RejectsForeignAndDuplicateFiles) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok() && c->SetupJob().ok());
  EXPECT_EQ(c->CommitJob({"mem://b/elsewhere/part-0"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c->CommitJob({"mem://b/out/_temporary/job1/part-0"}).status().code(),
            StatusCode::kInvalidArgument);
  const std::string a = OutputCommitter::TaskAttemptUri("mem://b/out", "job1", 0, 0, "p");
  const std::string b = OutputCommitter::TaskAttemptUri("mem://b/out", "job1", 1, 0, "p");
  EXPECT_EQ(c->CommitJob({a, b}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OutputCommitter::Make("mem://b/out", "a/b", WriteMode::kOverwrite).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(OutputCommitter::OpenTaskAttemptFile("mem://b/out", "job1", 0, 0, "x/y")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CommitterTest, AnAttemptCannotBeginAfterItsJobEnded) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok() && c->SetupJob().ok());
  ASSERT_TRUE(c->AbortJob().ok());
  auto w = OutputCommitter::OpenTaskAttemptFile("mem://b/out", "job1", 1, 3, "part-1");
  EXPECT_EQ(w.status().code(), StatusCode::kAborted) << w.status().ToString();
  EXPECT_NE(w.status().message().find("job1"), std::string::npos);
  EXPECT_TRUE(Keys().empty());
}

// A store without directories (as S3): the writer was open when the job was aborted,
// and completes its file afterwards.
TEST_F(CommitterTest, AnAttemptCompletedAfterTheAbortDeletesItself) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok() && c->SetupJob().ok());
  auto w = OutputCommitter::OpenTaskAttemptFile("mem://b/out", "job1", 1, 0, "part-1");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("straggler").ok());
  ASSERT_TRUE(c->AbortJob().ok());
  Status st = (*w)->Close();
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  EXPECT_TRUE(Keys().empty());
}

// The same after a commit: a losing attempt that completes late leaves nothing.
TEST_F(CommitterTest, ALosingAttemptCompletedAfterTheCommitLeavesNothing) {
  auto c = OutputCommitter::Make("mem://b/out", "job1", WriteMode::kErrorIfExists);
  ASSERT_TRUE(c.ok() && c->SetupJob().ok());
  auto late = OutputCommitter::OpenTaskAttemptFile("mem://b/out", "job1", 0, 1, "part-0");
  ASSERT_TRUE(late.ok());
  WriteAttempt("job1", 0, 0, "winner");
  ASSERT_TRUE(
      c->CommitJob({OutputCommitter::TaskAttemptUri("mem://b/out", "job1", 0, 0, "part-0")})
          .ok());
  ASSERT_TRUE((*late)->Write("loser").ok());
  EXPECT_EQ((*late)->Close().code(), StatusCode::kAborted);
  EXPECT_EQ(Keys(), (std::vector<std::string>{"mem://b/out/_SUCCESS", "mem://b/out/part-0"}));
  EXPECT_EQ(fs_->files["mem://b/out/part-0"], "winner");
}

}  // namespace
}  // namespace sparktf

namespace sparktf {
namespace {

// A filesystem with directories: an attempt whose process is killed at any point, or
// that runs on after the abort, leaves nothing, and the next job is spared.
TEST(LocalCommitterTest, NoAttemptWritesBelowAnAbortedJob) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  auto failed = OutputCommitter::Make(out, "old", WriteMode::kErrorIfExists);
  ASSERT_TRUE(failed.ok() && failed->SetupJob().ok());
  // Open when the job is aborted; its process would be killed before it cleans up.
  auto killed = OutputCommitter::OpenTaskAttemptFile(out, "old", 0, 0, "part-0");
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  ASSERT_TRUE((*killed)->Write("partial").ok());
  ASSERT_TRUE((*killed)->Flush().ok());
  ASSERT_TRUE(failed->AbortJob().ok());
  EXPECT_TRUE(std::filesystem::is_empty(out));
  // Begins after the abort (its task was already reported failed): refused, no directory.
  auto late = OutputCommitter::OpenTaskAttemptFile(out, "old", 1, 3, "part-1");
  EXPECT_EQ(late.status().code(), StatusCode::kAborted) << late.status().ToString();
  EXPECT_TRUE(std::filesystem::is_empty(out));
  // The open one completes after the abort: its directory is gone, so is its file.
  EXPECT_FALSE((*killed)->Close().ok());
  EXPECT_TRUE(std::filesystem::is_empty(out));

  // A straggler of the old job while the next job writes the same directory.
  auto next = OutputCommitter::Make(out, "new", WriteMode::kErrorIfExists);
  ASSERT_TRUE(next.ok() && next->SetupJob().ok());
  EXPECT_EQ(OutputCommitter::OpenTaskAttemptFile(out, "old", 2, 3, "part-2").status().code(),
            StatusCode::kAborted);
  EXPECT_FALSE(std::filesystem::exists(out + "/_temporary/old"));
  EXPECT_TRUE(std::filesystem::exists(out + "/_temporary/new/_job-live"));
}

TEST(LocalFileSystemTest, StreamingWritesAreVisibleWhileTheyGrow) {
  TempDir dir;
  const std::string path = dir.path() + "/sub/events";
  auto w = OpenStreamingOutputFile(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Write("abc").ok());
  ASSERT_TRUE((*w)->Flush().ok());
  auto st = StatPath(path);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, 3);
  ASSERT_TRUE((*w)->Write("de").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(StatPath(path)->size, 5);
}

}  // namespace
}  // namespace sparktf
