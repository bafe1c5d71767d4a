// Byte streams: the small interfaces that record readers and writers sit on.
//
// InputStream and OutputStream are not thread-safe; one owner uses each.
// Implementations here: in-memory buffers (for tests and fuzzing). Files of every
// filesystem come from fs/file_system.h; record/compression.h adds zlib decorators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sparktf/common/result.h"

namespace sparktf {

class InputStream {
 public:
  virtual ~InputStream() = default;
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to n bytes into dst. Returns the count read; 0 only at end of
  // stream. A failed read leaves the position unchanged.
  virtual Result<size_t> Read(char* dst, size_t n) = 0;
  // Moves to an absolute position. Streams that cannot seek (compressed ones)
  // return InvalidArgument.
  virtual Status Seek(uint64_t position) = 0;
  // Total size in bytes, or -1 when unknown (compressed streams).
  virtual int64_t Size() const = 0;
  // For messages: the file path or a description of the stream.
  virtual const std::string& name() const = 0;

 protected:
  InputStream() = default;
};

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  virtual Status Write(std::string_view data) = 0;
  // Pushes buffered bytes to the layer below (for files: the kernel).
  virtual Status Flush() = 0;
  // Flushes and releases the stream. Further calls fail. Must be called: the
  // destructor does not flush (it closes a file descriptor without reporting).
  virtual Status Close() = 0;
  virtual const std::string& name() const = 0;

 protected:
  OutputStream() = default;
};

// Reads from caller-owned memory, which must outlive the stream.
std::unique_ptr<InputStream> MakeMemoryInputStream(std::string_view data,
                                                   std::string name = "<memory>");

// Reads from memory the stream owns.
std::unique_ptr<InputStream> MakeOwnedMemoryInputStream(std::string data,
                                                        std::string name = "<memory>");

// Appends everything written to `*sink`, which must outlive the stream.
std::unique_ptr<OutputStream> MakeStringOutputStream(std::string* sink,
                                                     std::string name = "<memory>");

// Reads the whole stream.
Result<std::string> ReadAll(InputStream* in);

}  // namespace sparktf
