#include "sparktf/node/output_lines.h"

#include <nlohmann/json.hpp>

namespace sparktf::node {

void OutputLines::EndLine(Stream stream) {
  std::string& line = partial_[stream];
  if (pending_bytes_ + line.size() > max_pending_) {
    ++dropped_;
  } else {
    pending_bytes_ += line.size();
    lines_.emplace_back(stream, std::move(line));
  }
  line.clear();
}

void OutputLines::Append(Stream stream, std::string_view bytes) {
  std::string& line = partial_[stream];
  for (char c : bytes) {
    if (after_cr_[stream]) {
      after_cr_[stream] = false;
      if (c != '\n') line.clear();  // a lone '\r': the line is drawn again
    }
    if (c == '\n') {
      EndLine(stream);
    } else if (c == '\r') {
      after_cr_[stream] = true;
    } else {
      line += c;
      if (line.size() >= max_line_) EndLine(stream);
    }
  }
}

void OutputLines::FinishPartial() {
  for (Stream s : {kStdout, kStderr}) {
    after_cr_[s] = false;
    if (!partial_[s].empty()) EndLine(s);
  }
}

std::string OutputLines::TakePayload(int generation) {
  using json = nlohmann::json;
  json lines = json::array();
  for (auto& [stream, text] : lines_) {
    lines.push_back(json::array({stream == kStdout ? "stdout" : "stderr", std::move(text)}));
  }
  if (dropped_) {
    lines.push_back(json::array(
        {"stderr", "[sparktf: " + std::to_string(dropped_) + " lines of this node's output " +
                       "were dropped: more than " + std::to_string(max_pending_) +
                       " bytes came between two sends]"}));
  }
  lines_.clear();
  pending_bytes_ = 0;
  dropped_ = 0;
  return json{{"generation", generation}, {"lines", std::move(lines)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sparktf::node
