#include "sparktf/record/columnar_encoder.h"

#include <algorithm>
#include <numeric>

namespace sparktf {
namespace {

Status CheckColumn(const InputColumn& c, size_t num_rows) {
  const auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("column '" + c.name + "': " + what);
  };
  if (c.name.empty()) return bad("empty name");
  if ((c.kind == FeatureKind::kFloat && !c.floats && c.num_values) ||
      (c.kind == FeatureKind::kInt64 && !c.ints && c.num_values) ||
      (c.kind == FeatureKind::kBytes && !c.bytes_offsets)) {
    return bad("missing value buffer");
  }
  if (c.kind == FeatureKind::kNone) return bad("no kind");
  if (c.row_offsets) {
    for (size_t r = 0; r < num_rows; ++r) {
      if (c.row_offsets[r] < 0 || c.row_offsets[r] > c.row_offsets[r + 1] ||
          static_cast<size_t>(c.row_offsets[r + 1]) > c.num_values) {
        return bad("row offsets out of range at row " + std::to_string(r));
      }
    }
  } else if (c.num_values < num_rows) {
    return bad(std::to_string(c.num_values) + " values for " + std::to_string(num_rows) +
               " rows");
  }
  if (c.kind == FeatureKind::kBytes) {
    for (size_t i = 0; i < c.num_values; ++i) {
      if (c.bytes_offsets[i] < 0 || c.bytes_offsets[i] > c.bytes_offsets[i + 1]) {
        return bad("bytes offsets decrease at value " + std::to_string(i));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Status EncodeColumns(const std::vector<InputColumn>& columns, size_t num_rows,
                     const std::function<Status(std::string_view)>& sink) {
  std::vector<size_t> order(columns.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return columns[a].name < columns[b].name; });
  for (size_t i = 0; i < order.size(); ++i) {
    RETURN_NOT_OK(CheckColumn(columns[order[i]], num_rows));
    if (i > 0 && columns[order[i]].name == columns[order[i - 1]].name) {
      return Status::InvalidArgument("column '" + columns[order[i]].name +
                                     "' appears twice");
    }
  }
  std::vector<Feature> features(columns.size());  // reused: capacity stays
  std::vector<NamedFeature> present;
  present.reserve(columns.size());
  std::string out;
  for (size_t r = 0; r < num_rows; ++r) {
    present.clear();
    for (size_t k : order) {
      const InputColumn& c = columns[k];
      if (c.valid && !c.valid[r]) continue;
      Feature& f = features[k];
      f.kind = c.kind;
      size_t begin = r, end = r + 1;
      if (c.row_offsets) {
        begin = static_cast<size_t>(c.row_offsets[r]);
        end = static_cast<size_t>(c.row_offsets[r + 1]);
      }
      switch (c.kind) {
        case FeatureKind::kFloat:
          f.float_list.assign(c.floats + begin, c.floats + end);
          break;
        case FeatureKind::kInt64:
          f.int64_list.assign(c.ints + begin, c.ints + end);
          break;
        case FeatureKind::kBytes:
          f.bytes_list.resize(end - begin);
          for (size_t i = begin; i < end; ++i) {
            f.bytes_list[i - begin].assign(c.bytes_data + c.bytes_offsets[i],
                                           c.bytes_data + c.bytes_offsets[i + 1]);
          }
          break;
        case FeatureKind::kNone: break;
      }
      present.push_back({c.name, &f});
    }
    out.clear();
    EncodeSortedFeatures(present, &out);
    RETURN_NOT_OK(sink(out));
  }
  return Status::OK();
}

}  // namespace sparktf
