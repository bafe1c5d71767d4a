#include <charconv>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>

#include "sparktf/cli/commands.h"
#include "sparktf/cli/json_internal.h"
#include "sparktf/fs/file_system.h"
#include "sparktf/record/columnar.h"
#include "sparktf/record/record_reader.h"

namespace sparktf::cli {
namespace {

using nlohmann::json;

[[noreturn]] void Fail(const Status& st, int code = 1) {
  std::cerr << "sparktf: " << st.ToString() << "\n";
  throw CLI::RuntimeError(code);
}

std::vector<std::string> Files(const std::vector<std::string>& inputs) {
  auto files = ExpandPaths(inputs);
  if (!files.ok()) Fail(files.status(), 2);
  if (files->empty()) Fail(Status::NotFound("no input files"), 2);
  return *files;
}

// Reads every record of every file; fn(path, record) returns false to stop.
// Returns the first error, with the file named.
template <typename Fn>
Status Scan(const std::vector<std::string>& files, const std::string& compression,
            bool verify, Fn&& fn) {
  for (const auto& path : files) {
    RecordReaderOptions o;
    if (compression.empty() || compression == "auto") {
      o.compression = CompressionFromPath(path);
    } else {
      ASSIGN_OR_RETURN(o.compression, ParseCompression(compression));
    }
    o.verify_data_crc = verify;
    ASSIGN_OR_RETURN(auto reader, RecordReader::Open(path, o));
    std::string_view rec;
    while (true) {
      Status st = reader->ReadRecord(&rec);
      if (st.IsOutOfRange()) break;
      RETURN_NOT_OK(st);
      if (!fn(path, rec)) return Status::OK();
    }
  }
  return Status::OK();
}

std::string Base64(std::string_view s) {
  static const char* t =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += t[(v >> k) & 63];
  }
  if (i < s.size()) {
    uint32_t v = uint8_t(s[i]) << 16;
    if (i + 1 < s.size()) v |= uint8_t(s[i + 1]) << 8;
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < s.size() ? t[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

json FloatToJson(float f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f);  // shortest float32 form
  (void)ec;
  return std::strtod(std::string(buf, end).c_str(), nullptr);
}

struct CommonArgs {
  std::vector<std::string> inputs;
  std::string compression = "auto";
};

void AddCommon(CLI::App* cmd, CommonArgs* args) {
  cmd->add_option("files", args->inputs,
                  "TFRecord files, directories or globs: local paths or URIs (hdfs://, s3://)")
      ->required();
  cmd->add_option("-c,--compression", args->compression,
                  "none, GZIP, ZLIB or auto (by file name: .gz, .zlib)")
      ->capture_default_str();
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp;
    if ((c >> 5) == 0x6) {
      n = 1, cp = c & 0x1f;
    } else if ((c >> 4) == 0xe) {
      n = 2, cp = c & 0x0f;
    } else if ((c >> 3) == 0x1e) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b >> 6) != 0x2) return false;
      cp = (cp << 6) | (b & 0x3f);
    }
    const uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

json FeatureToJson(const Feature& f) {
  json values = json::array();
  switch (f.kind) {
    case FeatureKind::kInt64:
      for (int64_t v : f.int64_list) values.push_back(v);
      return {{"int64", values}};
    case FeatureKind::kFloat:
      for (float v : f.float_list) values.push_back(FloatToJson(v));
      return {{"float", values}};
    case FeatureKind::kBytes:
      for (const auto& v : f.bytes_list) {
        values.push_back(IsValidUtf8(v) ? json(v) : json{{"base64", Base64(v)}});
      }
      return {{"bytes", values}};
    case FeatureKind::kNone: break;
  }
  return nullptr;
}

json FeatureMapToJson(const FeatureMap& features) {
  json out = json::object();
  for (const auto& [name, f] : features) {
    out[IsValidUtf8(name) ? name : "base64:" + Base64(name)] = FeatureToJson(f);
  }
  return out;
}

void AddRecordsCommands(CLI::App* records) {
  // count
  auto count_args = std::make_shared<CommonArgs>();
  auto* count = records->add_subcommand("count", "Count records (checks every CRC)");
  AddCommon(count, count_args.get());
  count->callback([count_args] {
    auto files = Files(count_args->inputs);
    uint64_t total = 0;
    for (const auto& f : files) {
      uint64_t n = 0;
      Status st = Scan({f}, count_args->compression, true, [&](auto&, auto) {
        ++n;
        return true;
      });
      if (!st.ok()) Fail(st);
      if (files.size() > 1) std::cout << n << "\t" << f << "\n";
      total += n;
    }
    std::cout << total << (files.size() > 1 ? "\ttotal" : "") << "\n";
  });

  // cat
  auto cat_args = std::make_shared<CommonArgs>();
  auto limit = std::make_shared<int64_t>(-1);
  auto sequence = std::make_shared<bool>(false);
  auto* cat = records->add_subcommand("cat", "Print Examples as JSON lines");
  AddCommon(cat, cat_args.get());
  cat->add_option("-n,--limit", *limit, "Stop after this many records");
  cat->add_flag("--sequence", *sequence, "Records are tf.train.SequenceExample");
  cat->callback([cat_args, limit, sequence] {
    int64_t printed = 0;
    Status st = Scan(
        Files(cat_args->inputs), cat_args->compression, true,
        [&](const std::string& path, std::string_view rec) {
          if (*limit >= 0 && printed >= *limit) return false;
          json line;
          if (*sequence) {
            SequenceExample se;
            Status dst = DecodeSequenceExample(rec, &se);
            if (!dst.ok())
              Fail(dst.WithContext(path + " record " + std::to_string(printed)));
            json lists = json::object();
            for (const auto& [k, steps] : se.feature_lists) {
              json arr = json::array();
              for (const auto& f : steps) arr.push_back(FeatureToJson(f));
              lists[k] = arr;
            }
            line = {{"context", FeatureMapToJson(se.context)}, {"feature_lists", lists}};
          } else {
            Example ex;
            Status dst = DecodeExample(rec, &ex);
            if (!dst.ok())
              Fail(dst.WithContext(path + " record " + std::to_string(printed)));
            line = FeatureMapToJson(ex.features);
          }
          std::cout << line.dump() << "\n";
          ++printed;
          return true;
        });
    if (!st.ok()) Fail(st);
  });

  // inspect
  auto inspect_args = std::make_shared<CommonArgs>();
  auto max_records = std::make_shared<int64_t>(-1);
  auto as_json = std::make_shared<bool>(false);
  auto* inspect = records->add_subcommand(
      "inspect", "Features, their types and lengths, record count, inferred schema");
  AddCommon(inspect, inspect_args.get());
  inspect->add_option("--max-records", *max_records, "Scan only this many records");
  inspect->add_flag("--json", *as_json, "Print JSON instead of a table");
  inspect->callback([inspect_args, max_records, as_json] {
    auto files = Files(inspect_args->inputs);
    SchemaInferrer inferrer;
    Status st = Scan(files, inspect_args->compression, true,
                     [&](const std::string& path, std::string_view rec) {
                       if (*max_records >= 0 &&
                           static_cast<int64_t>(inferrer.num_rows()) >= *max_records) {
                         return false;
                       }
                       Status ist = inferrer.Append(rec);
                       if (!ist.ok()) Fail(ist.WithContext(path));
                       return true;
                     });
    if (!st.ok()) Fail(st);
    auto schema = inferrer.Schema();
    json features = json::array();
    for (const auto& [name, s] : inferrer.stats()) {
      json row = {{"name", name},
                  {"type", FeatureKindName(s.kind)},
                  {"present", s.present},
                  {"min_length", s.present ? s.min_length : 0},
                  {"max_length", s.max_length}};
      if (schema.ok()) {
        for (const auto& spec : *schema) {
          if (spec.name != name) continue;
          row["schema"] = spec.var_len
                              ? "VarLen(" + std::string(DTypeName(spec.dtype)) + ")"
                              : "FixedLen(" + std::string(DTypeName(spec.dtype)) + ", " +
                                    json(spec.shape).dump() + ")";
        }
      } else {
        row["schema"] = "conflicting types";
      }
      features.push_back(row);
    }
    if (*as_json) {
      std::cout << json{{"records", inferrer.num_rows()},
                        {"files", files.size()},
                        {"features", features}}
                       .dump(2)
                << "\n";
      return;
    }
    std::cout << "records: " << inferrer.num_rows() << " in " << files.size()
              << " file(s)\n";
    std::cout << std::left << std::setw(24) << "feature" << std::setw(12) << "type"
              << std::setw(10) << "present" << std::setw(9) << "min_len" << std::setw(9)
              << "max_len"
              << "schema\n";
    for (const auto& row : features) {
      std::cout << std::left << std::setw(24) << row["name"].get<std::string>()
                << std::setw(12) << row["type"].get<std::string>() << std::setw(10)
                << row["present"].dump() << std::setw(9) << row["min_length"].dump()
                << std::setw(9) << row["max_length"].dump()
                << row["schema"].get<std::string>() << "\n";
    }
  });

  // verify
  auto verify_args = std::make_shared<CommonArgs>();
  auto* verify = records->add_subcommand(
      "verify", "Check every record's CRCs; exit 1 naming the first bad file and offset");
  AddCommon(verify, verify_args.get());
  verify->callback([verify_args] {
    auto files = Files(verify_args->inputs);
    uint64_t n = 0;
    Status st = Scan(files, verify_args->compression, true, [&](auto&, auto) {
      ++n;
      return true;
    });
    if (!st.ok()) {
      std::cout << "FAILED after " << n << " good records: " << st.message() << "\n";
      throw CLI::RuntimeError(1);
    }
    std::cout << "OK: " << n << " records in " << files.size() << " file(s)\n";
  });

  // convert
  auto copts = std::make_shared<ConvertOptions>();
  auto* convert = records->add_subcommand(
      "convert",
      "CSV (with a header) or JSON lines -> TFRecord shards of tf.train.Example");
  convert->add_option("inputs", copts->inputs, "CSV or JSON-lines files (local paths or URIs)")
      ->required();
  convert->add_option("-o,--output-dir", copts->output_dir,
                      "Directory for the shards (a local path or a URI: hdfs://, s3://)")
      ->required();
  convert->add_option("-f,--format", copts->format, "csv, jsonl or auto (by extension)")
      ->capture_default_str();
  convert->add_option("-n,--shards", copts->shards, "Number of output files")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  convert->add_option("-c,--compression", copts->compression, "none, GZIP or ZLIB");
  convert->add_option("--schema", copts->schema,
                      "Types for some or all columns: name:int64,name:float32,name:bytes "
                      "(others are inferred)");
  convert->add_option("--prefix", copts->prefix, "Shard file name prefix")
      ->capture_default_str();
  convert->add_option("--delimiter", copts->delimiter, "CSV field delimiter")
      ->capture_default_str();
  convert->callback([copts] {
    Status st = Convert(*copts);
    if (!st.ok()) Fail(st);
  });
}

}  // namespace sparktf::cli
