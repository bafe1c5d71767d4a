#include "sparktf/record/record_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sparktf/record/crc32c.h"
#include "sparktf/record/record_writer.h"

namespace sparktf {
namespace {

std::string Frame(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) AppendFramedRecord(r, &out);
  return out;
}

std::unique_ptr<RecordReader> ReaderOn(const std::string& data,
                                       RecordReaderOptions options = {}) {
  auto r = RecordReader::Make(MakeOwnedMemoryInputStream(data, "mem.tfrecord"), options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).ValueOrDie();
}

// Reads to the end; returns the records and the status that ended reading.
std::pair<std::vector<std::string>, Status> ReadAllRecords(RecordReader* reader) {
  std::vector<std::string> out;
  std::string_view rec;
  while (true) {
    Status st = reader->ReadRecord(&rec);
    if (!st.ok()) return {out, st.IsOutOfRange() ? Status::OK() : st};
    out.emplace_back(rec);
  }
}

const std::vector<std::string> kRecords = {"", "a", std::string(300, 'x'), "hello world",
                                           std::string(70000, '\x01')};

TEST(RecordReaderTest, RoundTripAllCompressions) {
  for (Compression kind : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string file;
    RecordWriterOptions wopts;
    wopts.compression = kind;
    wopts.buffer_size = 1000;  // exercise both the buffered and direct paths
    auto writer = RecordWriter::Make(MakeStringOutputStream(&file), wopts);
    ASSERT_TRUE(writer.ok());
    for (const auto& r : kRecords) ASSERT_TRUE((*writer)->Write(r).ok());
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_EQ((*writer)->records_written(), kRecords.size());
    if (kind == Compression::kNone) {
      EXPECT_EQ(file, Frame(kRecords));
    }
    RecordReaderOptions ropts;
    ropts.compression = kind;
    ropts.buffer_size = 64;  // records larger than the buffer
    auto reader = ReaderOn(file, ropts);
    auto [got, st] = ReadAllRecords(reader.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(got, kRecords);
    EXPECT_EQ(reader->stats().records, kRecords.size());
  }
}

TEST(RecordReaderTest, EmptyFileEndsCleanly) {
  auto reader = ReaderOn("");
  std::string_view rec;
  EXPECT_TRUE(reader->ReadRecord(&rec).IsOutOfRange());
}

// One byte flip in each framing field: length, length CRC, data, data CRC.
TEST(RecordReaderTest, FlippedByteInEachFieldIsDataLossAtThatRecord) {
  const std::string good = Frame({"first", "second record", "third"});
  const size_t second = kRecordHeaderSize + 5 + kRecordFooterSize;
  struct Case {
    size_t at;
    const char* expect;
  };
  for (Case c : {Case{second + 0, "length CRC"}, Case{second + 9, "length CRC"},
                 Case{second + 12, "data CRC"}, Case{second + 12 + 13, "data CRC"}}) {
    std::string bad = good;
    bad[c.at] ^= 0x20;
    auto reader = ReaderOn(bad);
    auto [got, st] = ReadAllRecords(reader.get());
    ASSERT_EQ(st.code(), StatusCode::kDataLoss) << "flip at " << c.at;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("mem.tfrecord"), std::string::npos);
    EXPECT_NE(st.message().find("offset " + std::to_string(second)), std::string::npos)
        << st.message();
    EXPECT_EQ(got, std::vector<std::string>{"first"});
    // A failed read does not advance: the same error again.
    std::string_view rec;
    EXPECT_EQ(reader->ReadRecord(&rec).message(), st.message());
    EXPECT_EQ(reader->offset(), second);
  }
}

TEST(RecordReaderTest, TruncatedLastRecordIsDataLossAtEveryCut) {
  const std::string good = Frame({"alpha", "beta-record"});
  const size_t second = kRecordHeaderSize + 5 + kRecordFooterSize;
  for (size_t cut = second + 1; cut < good.size(); ++cut) {
    auto reader = ReaderOn(good.substr(0, cut));
    auto [got, st] = ReadAllRecords(reader.get());
    ASSERT_EQ(st.code(), StatusCode::kDataLoss) << "cut at " << cut;
    EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
    EXPECT_EQ(got.size(), 1u);
  }
}

TEST(RecordReaderTest, NotATfrecordFileHintsAtCompression) {
  auto reader = ReaderOn("this is plain text, not a TFRecord file at all\n");
  std::string_view rec;
  Status st = reader->ReadRecord(&rec);
  ASSERT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("offset 0"), std::string::npos);
  EXPECT_NE(st.message().find("may be compressed"), std::string::npos);
}

TEST(RecordReaderTest, HugeDeclaredLengthDoesNotAllocate) {
  // A header with a valid CRC that declares 2^60 bytes, then nothing.
  std::string data(kRecordHeaderSize, 0);
  uint64_t huge = uint64_t{1} << 60;
  std::memcpy(data.data(), &huge, 8);
  uint32_t crc = crc32c::Mask(crc32c::Value(data.data(), 8));
  std::memcpy(data.data() + 8, &crc, 4);
  data += "some bytes";
  for (Compression kind : {Compression::kNone, Compression::kGzip}) {
    std::string file = data;
    if (kind == Compression::kGzip) {
      file.clear();
      auto out = MakeDeflateStream(MakeStringOutputStream(&file), kind);
      ASSERT_TRUE((*out)->Write(data).ok());
      ASSERT_TRUE((*out)->Close().ok());
    }
    RecordReaderOptions o;
    o.compression = kind;
    auto reader = ReaderOn(file, o);
    std::string_view rec;
    Status st = reader->ReadRecord(&rec);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss);
    EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
  }
}

TEST(RecordReaderTest, WrongCompressionFlagIsDataLoss) {
  std::string file;
  RecordWriterOptions w;
  w.compression = Compression::kGzip;
  auto writer = RecordWriter::Make(MakeStringOutputStream(&file), w);
  ASSERT_TRUE((*writer)->Write("payload").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  // Read gzip bytes as uncompressed.
  auto plain = ReaderOn(file);
  auto [got, st] = ReadAllRecords(plain.get());
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  // Read uncompressed bytes as ZLIB.
  RecordReaderOptions z;
  z.compression = Compression::kZlib;
  auto zr = ReaderOn(Frame({"payload"}), z);
  auto [got2, st2] = ReadAllRecords(zr.get());
  EXPECT_EQ(st2.code(), StatusCode::kDataLoss);
}

TEST(RecordReaderTest, SkipCorruptResynchronisesAndCounts) {
  std::string data = Frame({"one", "two", "three", "four"});
  const size_t second = kRecordHeaderSize + 3 + kRecordFooterSize;
  data[second + 12] ^= 1;  // corrupt the data of "two"
  RecordReaderOptions o;
  o.skip_corrupt = true;
  auto reader = ReaderOn("garbage" + data + "tail", o);
  auto [got, st] = ReadAllRecords(reader.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, (std::vector<std::string>{"one", "three", "four"}));
  EXPECT_EQ(reader->stats().corrupt_regions, 3u);  // leading garbage, "two", tail
  EXPECT_EQ(reader->stats().skipped_bytes, 7 + (kRecordHeaderSize + 3 + 4) + 4);
}

TEST(RecordReaderTest, IndexSplitsAFileAmongReaders) {
  std::vector<std::string> records;
  for (int i = 0; i < 100; ++i) records.push_back("record-" + std::to_string(i));
  auto dir = std::filesystem::temp_directory_path() /
             ("sparktf_idx_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (Compression kind : {Compression::kNone, Compression::kGzip}) {
    const std::string path = (dir / "f.tfrecord").string();
    RecordWriterOptions w;
    w.compression = kind;
    auto writer = RecordWriter::Open(path, w);
    for (const auto& r : records) ASSERT_TRUE((*writer)->Write(r).ok());
    ASSERT_TRUE((*writer)->Close().ok());

    auto index = BuildRecordIndex(path, kind);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_EQ(index->size(), records.size());
    std::vector<std::string> joined;
    const std::vector<size_t> cuts = {0, 33, 34, 99, 100};
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      RecordReaderOptions o;
      o.compression = kind;
      o.start_offset = (*index)[cuts[k]];
      o.end_offset = cuts[k + 1] < index->size() ? (*index)[cuts[k + 1]] : UINT64_MAX;
      auto reader = RecordReader::Open(path, o);
      ASSERT_TRUE(reader.ok());
      auto [got, st] = ReadAllRecords(reader->get());
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(got.size(), cuts[k + 1] - cuts[k]);
      joined.insert(joined.end(), got.begin(), got.end());
    }
    EXPECT_EQ(joined, records);
  }
  std::filesystem::remove_all(dir);
}

TEST(RecordReaderTest, MissingPathIsNotFound) {
  auto r = RecordReader::Open("/nonexistent/dir/x.tfrecord");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/x.tfrecord"), std::string::npos);
  auto d = RecordReader::Open("/");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
}

TEST(RecordReaderTest, WriteAfterCloseFails) {
  std::string sink;
  auto writer = RecordWriter::Make(MakeStringOutputStream(&sink));
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ((*writer)->Write("x").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparktf
