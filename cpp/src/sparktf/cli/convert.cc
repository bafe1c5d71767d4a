// sparktf records convert: CSV / JSON lines -> TFRecord shards.
//
// Two passes over the input: the first infers each column's type (unless
// --schema gives it), the second encodes and writes. Rows go to shards round
// robin. Empty CSV cells and JSON nulls leave the feature out of that record.
#include <csv.h>

#include <charconv>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "sparktf/cli/commands.h"
#include "sparktf/fs/file_system.h"
#include "sparktf/record/example.h"
#include "sparktf/record/record_writer.h"

namespace sparktf::cli {
namespace {

using nlohmann::json;

enum class Kind { kUnknown, kInt64, kFloat, kBytes };

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kInt64: return "int64";
    case Kind::kFloat: return "float32";
    case Kind::kBytes: return "bytes";
    case Kind::kUnknown: break;
  }
  return "unknown";
}

// A cell before typing: CSV text, or a parsed JSON value.
struct Cell {
  std::string name;
  bool is_text = false;
  std::string text;
  json value;
};

struct Row {
  std::vector<Cell> cells;
  size_t number = 0;  // 1-based data row
};

using RowFn = std::function<Status(const Row&)>;

bool ParseInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseFloat(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// ---- readers ---------------------------------------------------------------

struct CsvState {
  std::vector<std::string> header;
  std::vector<std::string> fields;
  size_t rows = 0;
  const RowFn* fn;
  std::string path;
  Status status;
};

void CsvField(void* s, size_t len, void* data) {
  static_cast<CsvState*>(data)->fields.emplace_back(static_cast<const char*>(s), len);
}

void CsvRowEnd(int, void* data) {
  auto* st = static_cast<CsvState*>(data);
  std::vector<std::string> fields = std::move(st->fields);
  st->fields.clear();
  if (!st->status.ok()) return;
  if (st->header.empty()) {
    st->header = std::move(fields);
    return;
  }
  ++st->rows;
  if (fields.size() != st->header.size()) {
    st->status = Status::InvalidArgument(st->path + ": row " + std::to_string(st->rows) +
                                         " has " + std::to_string(fields.size()) +
                                         " fields but the header has " +
                                         std::to_string(st->header.size()));
    return;
  }
  Row row;
  row.number = st->rows;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].empty()) continue;
    row.cells.push_back(Cell{st->header[i], true, std::move(fields[i]), nullptr});
  }
  st->status = (*st->fn)(row);
}

Status ForEachCsvRow(const std::string& path, char delimiter, const RowFn& fn) {
  ASSIGN_OR_RETURN(auto in, OpenInputFile(path));
  csv_parser parser;
  if (csv_init(&parser, CSV_APPEND_NULL | CSV_EMPTY_IS_NULL) != 0) {
    return Status::Internal("csv_init failed");
  }
  csv_set_delim(&parser, static_cast<unsigned char>(delimiter));
  CsvState state;
  state.fn = &fn;
  state.path = path;
  std::vector<char> buf(1 << 16);
  while (state.status.ok()) {
    Result<size_t> read = in->Read(buf.data(), buf.size());
    if (!read.ok()) {
      state.status = read.status();
      break;
    }
    const size_t got = *read;
    if (got == 0) break;
    if (csv_parse(&parser, buf.data(), got, CsvField, CsvRowEnd, &state) != got) {
      state.status = Status::InvalidArgument(path + ": CSV error near row " +
                                             std::to_string(state.rows + 1) + ": " +
                                             csv_strerror(csv_error(&parser)));
    }
  }
  if (state.status.ok()) csv_fini(&parser, CsvField, CsvRowEnd, &state);
  csv_free(&parser);
  if (state.status.ok() && state.header.empty()) {
    return Status::InvalidArgument(path + ": empty CSV file (a header row is required)");
  }
  return state.status;
}

// Calls fn(line) for each line of `in` (without the newline).
Status ForEachLine(InputStream* in, const std::function<Status(const std::string&)>& fn) {
  std::vector<char> buf(1 << 16);
  std::string line;
  while (true) {
    ASSIGN_OR_RETURN(size_t got, in->Read(buf.data(), buf.size()));
    if (got == 0) break;
    size_t start = 0;
    for (size_t i = 0; i < got; ++i) {
      if (buf[i] != '\n') continue;
      line.append(buf.data() + start, i - start);
      RETURN_NOT_OK(fn(line));
      line.clear();
      start = i + 1;
    }
    line.append(buf.data() + start, got - start);
  }
  if (!line.empty()) RETURN_NOT_OK(fn(line));
  return Status::OK();
}

Status ForEachJsonRow(const std::string& path, const RowFn& fn) {
  ASSIGN_OR_RETURN(auto in, OpenInputFile(path));
  size_t line_no = 0, rows = 0;
  return ForEachLine(in.get(), [&](const std::string& line) -> Status {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) return Status::OK();
    json obj = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (obj.is_discarded() || !obj.is_object()) {
      return Status::InvalidArgument(path + ":" + std::to_string(line_no) +
                                     ": not a JSON object");
    }
    Row row;
    row.number = ++rows;
    for (auto& [k, v] : obj.items()) {
      if (v.is_null()) continue;
      row.cells.push_back(Cell{k, false, {}, std::move(v)});
    }
    return fn(row).WithContext(path + ":" + std::to_string(line_no));
  });
}

// ---- typing ----------------------------------------------------------------

Kind MergeKinds(Kind a, Kind b, bool text_wins, const std::string& column) {
  if (a == Kind::kUnknown || a == b) return b;
  if (b == Kind::kUnknown) return a;
  if (a == Kind::kBytes || b == Kind::kBytes) {
    if (text_wins) return Kind::kBytes;
    throw std::runtime_error("column '" + column + "' mixes strings and numbers");
  }
  return Kind::kFloat;  // int and float
}

Kind KindOfText(const std::string& s) {
  int64_t i;
  double d;
  if (ParseInt(s, &i)) return Kind::kInt64;
  if (ParseFloat(s, &d)) return Kind::kFloat;
  return Kind::kBytes;
}

Kind KindOfJson(const json& v, const std::string& column) {
  if (v.is_boolean() || v.is_number_integer()) return Kind::kInt64;
  if (v.is_number_float()) return Kind::kFloat;
  if (v.is_string()) return Kind::kBytes;
  if (v.is_array()) {
    Kind k = Kind::kUnknown;
    for (const auto& e : v) {
      if (e.is_array() || e.is_object() || e.is_null()) {
        throw std::runtime_error("column '" + column +
                                 "': nested arrays, objects and nulls in arrays are not "
                                 "supported");
      }
      k = MergeKinds(k, KindOfJson(e, column), false, column);
    }
    return k;
  }
  throw std::runtime_error("column '" + column + "': objects are not supported");
}

Status AppendJsonValue(const json& v, Kind kind, const std::string& column, Feature* f) {
  if (v.is_array()) {
    for (const auto& e : v) RETURN_NOT_OK(AppendJsonValue(e, kind, column, f));
    return Status::OK();
  }
  const auto bad = [&] {
    return Status::InvalidArgument("column '" + column + "': " + v.dump() + " is not " +
                                   std::string(KindName(kind)));
  };
  switch (kind) {
    case Kind::kInt64:
      if (v.is_boolean()) {
        f->int64_list.push_back(v.get<bool>() ? 1 : 0);
      } else if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
        return bad();
      } else if (v.is_number_integer()) {
        f->int64_list.push_back(v.get<int64_t>());
      } else {
        return bad();
      }
      return Status::OK();
    case Kind::kFloat:
      if (!v.is_number() && !v.is_boolean()) return bad();
      f->float_list.push_back(v.is_boolean() ? (v.get<bool>() ? 1.f : 0.f)
                                             : v.get<float>());
      return Status::OK();
    case Kind::kBytes:
      if (!v.is_string()) return bad();
      f->bytes_list.push_back(v.get<std::string>());
      return Status::OK();
    case Kind::kUnknown: break;
  }
  return bad();
}

Status ToFeature(const Cell& cell, Kind kind, Feature* f) {
  f->kind = kind == Kind::kInt64   ? FeatureKind::kInt64
            : kind == Kind::kFloat ? FeatureKind::kFloat
                                   : FeatureKind::kBytes;
  if (!cell.is_text) return AppendJsonValue(cell.value, kind, cell.name, f);
  switch (kind) {
    case Kind::kInt64: {
      int64_t v;
      if (!ParseInt(cell.text, &v)) {
        return Status::InvalidArgument("column '" + cell.name + "': '" + cell.text +
                                       "' is not an int64");
      }
      f->int64_list.push_back(v);
      return Status::OK();
    }
    case Kind::kFloat: {
      double v;
      if (!ParseFloat(cell.text, &v)) {
        return Status::InvalidArgument("column '" + cell.name + "': '" + cell.text +
                                       "' is not a number");
      }
      f->float_list.push_back(static_cast<float>(v));
      return Status::OK();
    }
    default: f->bytes_list.push_back(cell.text); return Status::OK();
  }
}

Result<std::map<std::string, Kind>> ParseSchema(const std::string& spec) {
  std::map<std::string, Kind> out;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item =
        spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() : comma + 1;
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return Status::InvalidArgument("--schema item '" + item + "' is not name:dtype");
    }
    std::string type = item.substr(colon + 1);
    Kind k = type == "int64"                          ? Kind::kInt64
             : (type == "float32" || type == "float") ? Kind::kFloat
             : (type == "bytes" || type == "string")  ? Kind::kBytes
                                                      : Kind::kUnknown;
    if (k == Kind::kUnknown) {
      return Status::InvalidArgument("--schema: unknown dtype '" + type +
                                     "' (expected int64, float32 or bytes)");
    }
    out[item.substr(0, colon)] = k;
  }
  return out;
}

}  // namespace

Status Convert(const ConvertOptions& options) {
  if (options.shards < 1) return Status::InvalidArgument("--shards must be at least 1");
  ASSIGN_OR_RETURN(Compression compression, ParseCompression(options.compression));
  ASSIGN_OR_RETURN(auto given, ParseSchema(options.schema));

  auto for_each_row = [&](const RowFn& fn) -> Status {
    for (const auto& path : options.inputs) {
      std::string format = options.format;
      if (format == "auto") {
        const std::string_view base = UriBaseName(path);
        const size_t dot = base.rfind('.');
        const std::string ext(dot == std::string_view::npos ? "" : base.substr(dot));
        format =
            (ext == ".json" || ext == ".jsonl" || ext == ".ndjson") ? "jsonl" : "csv";
      }
      if (format == "csv") {
        RETURN_NOT_OK(ForEachCsvRow(path, options.delimiter, fn));
      } else if (format == "jsonl") {
        RETURN_NOT_OK(ForEachJsonRow(path, fn));
      } else {
        return Status::InvalidArgument("unknown --format '" + format +
                                       "' (expected csv, jsonl or auto)");
      }
    }
    return Status::OK();
  };

  // Pass 1: infer what --schema does not give.
  std::map<std::string, Kind> kinds = given;
  std::vector<std::string> order;
  Status st = for_each_row([&](const Row& row) -> Status {
    for (const auto& cell : row.cells) {
      auto [it, fresh] = kinds.try_emplace(cell.name, Kind::kUnknown);
      if (fresh || std::find(order.begin(), order.end(), cell.name) == order.end()) {
        order.push_back(cell.name);
      }
      if (given.count(cell.name)) continue;
      try {
        Kind k = cell.is_text ? KindOfText(cell.text) : KindOfJson(cell.value, cell.name);
        it->second = MergeKinds(it->second, k, cell.is_text, cell.name);
      } catch (const std::runtime_error& e) {
        return Status::InvalidArgument(e.what());
      }
    }
    return Status::OK();
  });
  RETURN_NOT_OK(st);

  // Pass 2: encode and write. Shards become visible only when all are complete.
  RETURN_NOT_OK(MakeDirs(options.output_dir));
  const char* suffix = compression == Compression::kGzip   ? ".tfrecord.gz"
                       : compression == Compression::kZlib ? ".tfrecord.zlib"
                                                           : ".tfrecord";
  std::vector<std::unique_ptr<RecordWriter>> writers;
  std::vector<std::string> paths;
  for (int i = 0; i < options.shards; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05d-of-%05d", i, options.shards);
    paths.push_back(JoinUri(options.output_dir, options.prefix + name + suffix));
    RecordWriterOptions wo;
    wo.compression = compression;
    ASSIGN_OR_RETURN(auto w, RecordWriter::Open(paths.back(), wo));
    writers.push_back(std::move(w));
  }
  uint64_t written = 0;
  std::string buf;
  st = for_each_row([&](const Row& row) -> Status {
    Example ex;
    for (const auto& cell : row.cells) {
      Kind k = kinds[cell.name];
      if (k == Kind::kUnknown) k = Kind::kFloat;  // only empty arrays were seen
      RETURN_NOT_OK(ToFeature(cell, k, &ex.features[cell.name])
                        .WithContext("row " + std::to_string(row.number)));
    }
    buf.clear();
    EncodeExample(ex, &buf);
    RETURN_NOT_OK(writers[written % writers.size()]->Write(buf));
    ++written;
    return Status::OK();
  });
  size_t closed = 0;
  for (; st.ok() && closed < writers.size(); ++closed) st = writers[closed]->Close();
  if (!st.ok()) {
    // No partial output: shards not closed are discarded with their writers.
    for (size_t i = 0; i + 1 < closed; ++i) (void)DeletePath(paths[i], false);
    return st;
  }
  std::cout << "wrote " << written << " records to " << writers.size() << " shard(s) in "
            << options.output_dir << "\nschema:";
  for (const auto& name : order) std::cout << " " << name << ":" << KindName(kinds[name]);
  std::cout << "\n";
  return Status::OK();
}

}  // namespace sparktf::cli
