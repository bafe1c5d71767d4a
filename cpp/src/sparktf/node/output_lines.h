// Cuts what a TF process writes to its stdout and stderr into lines for NODE_OUTPUT
// (docs/protocol.md). '\n' ends a line ("\r\n" too); a '\r' alone starts the line again,
// so a progress bar that redraws itself (Keras's verbose=1) is sent once, in its last
// state; a line longer than max_line is cut there. Lines beyond max_pending bytes held
// between two Take calls are dropped and counted, and the count is sent instead.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sparktf::node {

class OutputLines {
 public:
  enum Stream { kStdout = 0, kStderr = 1 };

  explicit OutputLines(size_t max_line = 16384, size_t max_pending = size_t{1} << 20)
      : max_line_(max_line), max_pending_(max_pending) {}

  void Append(Stream stream, std::string_view bytes);
  // Ends each stream's unfinished line (when the process is gone).
  void FinishPartial();
  bool empty() const { return lines_.empty() && dropped_ == 0; }
  size_t pending_bytes() const { return pending_bytes_; }
  // NODE_OUTPUT's payload for the lines held (and a line that counts the dropped ones),
  // which are then forgotten. Invalid UTF-8 is replaced, never refused.
  std::string TakePayload(int generation);

 private:
  void EndLine(Stream stream);

  size_t max_line_, max_pending_;
  std::array<std::string, 2> partial_;
  std::array<bool, 2> after_cr_{false, false};
  std::vector<std::pair<Stream, std::string>> lines_;
  size_t pending_bytes_ = 0;
  size_t dropped_ = 0;
};

}  // namespace sparktf::node
