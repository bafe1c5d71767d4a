#include "sparktf/cluster/status_table.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace sparktf::cluster {

using json = nlohmann::json;

namespace {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// A number with at most 4 significant digits, "-" for null or absent.
std::string Number(const json& v, int decimals = 1) {
  if (!v.is_number()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return Fixed(v.get<double>(), decimals);
}

std::string Percent(const json& v) {
  return v.is_number() ? Fixed(v.get<double>() * 100, 0) + "%" : "-";
}

std::string Duration(const json& v) {
  if (!v.is_number()) return "-";
  const int64_t s = static_cast<int64_t>(v.get<double>());
  if (s < 120) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m";
}

const json& At(const json& j, const char* key) {
  static const json null;
  return j.is_object() && j.contains(key) ? j[key] : null;
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

Result<std::string> FormatStatusTable(const std::string& status_json) {
  const json s = json::parse(status_json, nullptr, false);
  if (!s.is_object() || !s.contains("nodes") || !s["nodes"].is_array()) {
    return Status::InvalidArgument("not a sparktf cluster status (no \"nodes\" list)");
  }
  const std::vector<std::string> header = {"NODE", "HOST",  "EXECUTOR", "PID",    "STATE",
                                           "GEN",  "UP",    "BEAT",     "EPOCH",  "STEP",
                                           "STEP/S", "LOSS", "ROWS",    "ROWS/S", "STALL",
                                           "RING", "NOTE"};
  std::vector<std::vector<std::string>> rows = {header};
  std::vector<std::string> errors;
  const json& gen = At(s, "generation");
  for (const json& n : s["nodes"]) {
    const json& training = At(n, "training");
    const json& input = At(n, "input");
    std::string note;
    if (At(n, "straggler") == true) note = "straggler";
    const std::string traceback = At(n, "traceback").is_string() ? n["traceback"].get<std::string>() : "";
    const std::string name = At(n, "name").is_string() ? n["name"].get<std::string>() : "?";
    if (!traceback.empty()) {
      note += note.empty() ? "failed" : ", failed";
      errors.push_back(name + ": " + LastLine(traceback));
    } else if (At(n, "phase") == "exited" && At(n, "exit_code").is_number() &&
               n["exit_code"].get<int>() != 0 && At(n, "stopped") != true) {
      note += note.empty() ? "" : ", ";
      note += "exit " + std::to_string(n["exit_code"].get<int>());
    }
    const bool live = At(n, "phase") == "running" || At(n, "phase") == "registered";
    rows.push_back({name, At(n, "host").is_string() ? n["host"].get<std::string>() : "-",
                    Number(At(n, "executor_id")), Number(At(n, "pid")),
                    At(n, "phase").is_string() ? n["phase"].get<std::string>() : "-",
                    Number(gen), Duration(At(n, "uptime_s")),
                    live ? Duration(At(n, "heartbeat_age_s")) : "-",
                    Number(At(training, "epoch")), Number(At(training, "step")),
                    Number(At(training, "steps_per_sec")),
                    Number(At(At(training, "metrics"), "loss"), 4),
                    Number(At(input, "rows_taken")), Number(At(input, "rows_per_sec"), 0),
                    Percent(At(input, "stall")), Percent(At(input, "ring_fill")), note});
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  const json& totals = At(s, "totals");
  const json& phases = At(totals, "nodes");
  std::string out = "sparktf cluster: " + Number(At(s, "registered")) + " of " +
                    Number(At(s, "num_nodes")) + " nodes registered, " +
                    Number(At(phases, "running")) + " running, " + Number(At(phases, "exited")) +
                    " exited, " + Number(At(phases, "lost")) + " lost; generation " +
                    Number(gen) + "; up " + Duration(At(s, "uptime_s")) + "; rows taken " +
                    Number(At(totals, "rows_taken")) + " of " + Number(At(totals, "rows_fed")) +
                    " fed (" + Number(At(totals, "rows_per_sec"), 0) + " rows/s)\n";
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const auto& e : errors) out += "error: " + e + "\n";
  if (At(s, "aborted") == true && At(s, "abort_reason").is_string()) {
    out += "aborted: " + s["abort_reason"].get<std::string>() + "\n";
  }
  return out;
}

}  // namespace sparktf::cluster
