#include "sparktf/record/example.h"

namespace sparktf {

using wire::MakeTag;
using wire::PutVarint;
using wire::VarintSize;

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kNone: return "no list";
    case FeatureKind::kBytes: return "bytes_list";
    case FeatureKind::kFloat: return "float_list";
    case FeatureKind::kInt64: return "int64_list";
  }
  return "?";
}

size_t Feature::size() const {
  switch (kind) {
    case FeatureKind::kBytes: return bytes_list.size();
    case FeatureKind::kFloat: return float_list.size();
    case FeatureKind::kInt64: return int64_list.size();
    case FeatureKind::kNone: break;
  }
  return 0;
}

namespace {

// ---- encoding -------------------------------------------------------------

size_t PackedInt64Size(const std::vector<int64_t>& v) {
  size_t n = 0;
  for (int64_t x : v) n += VarintSize(static_cast<uint64_t>(x));
  return n;
}

// Size of the list message (BytesList/FloatList/Int64List) inside a Feature.
size_t ListSize(const Feature& f) {
  switch (f.kind) {
    case FeatureKind::kBytes: {
      size_t n = 0;
      for (const auto& s : f.bytes_list) n += 1 + VarintSize(s.size()) + s.size();
      return n;
    }
    case FeatureKind::kFloat: {
      const size_t data = 4 * f.float_list.size();
      return data == 0 ? 0 : 1 + VarintSize(data) + data;
    }
    case FeatureKind::kInt64: {
      const size_t data = PackedInt64Size(f.int64_list);
      return data == 0 ? 0 : 1 + VarintSize(data) + data;
    }
    case FeatureKind::kNone: break;
  }
  return 0;
}

size_t FeatureSize(const Feature& f) {
  if (f.kind == FeatureKind::kNone) return 0;
  const size_t list = ListSize(f);
  return 1 + VarintSize(list) + list;
}

void PutFeature(const Feature& f, std::string* out) {
  if (f.kind == FeatureKind::kNone) return;
  out->push_back(static_cast<char>(MakeTag(static_cast<uint32_t>(f.kind), wire::kLen)));
  PutVarint(ListSize(f), out);
  switch (f.kind) {
    case FeatureKind::kBytes:
      for (const auto& s : f.bytes_list) {
        out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
        PutVarint(s.size(), out);
        out->append(s);
      }
      break;
    case FeatureKind::kFloat:
      if (!f.float_list.empty()) {
        out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
        PutVarint(4 * f.float_list.size(), out);
        out->append(reinterpret_cast<const char*>(f.float_list.data()),
                    4 * f.float_list.size());
      }
      break;
    case FeatureKind::kInt64:
      if (!f.int64_list.empty()) {
        out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
        PutVarint(PackedInt64Size(f.int64_list), out);
        for (int64_t x : f.int64_list) PutVarint(static_cast<uint64_t>(x), out);
      }
      break;
    case FeatureKind::kNone: break;
  }
}

size_t EntrySize(std::string_view key, size_t value_size) {
  return 1 + VarintSize(key.size()) + key.size() + 1 + VarintSize(value_size) +
         value_size;
}

// Writes one map entry: key (field 1) and value (field 2), always both.
void PutEntryHeader(std::string_view key, size_t value_size, std::string* out) {
  out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
  PutVarint(EntrySize(key, value_size), out);
  out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
  PutVarint(key.size(), out);
  out->append(key);
  out->push_back(static_cast<char>(MakeTag(2, wire::kLen)));
  PutVarint(value_size, out);
}

size_t FeaturesSize(const FeatureMap& m) {
  size_t n = 0;
  for (const auto& [key, f] : m) {
    const size_t e = EntrySize(key, FeatureSize(f));
    n += 1 + VarintSize(e) + e;
  }
  return n;
}

void PutFeatures(const FeatureMap& m, std::string* out) {
  for (const auto& [key, f] : m) {
    PutEntryHeader(key, FeatureSize(f), out);
    PutFeature(f, out);
  }
}

size_t FeatureListSize(const std::vector<Feature>& list) {
  size_t n = 0;
  for (const auto& f : list) {
    const size_t s = FeatureSize(f);
    n += 1 + VarintSize(s) + s;
  }
  return n;
}

// ---- decoding -------------------------------------------------------------

using example_internal::Malformed;

Status DecodeFeature(std::string_view data, Feature* f) {
  *f = Feature{};
  example_internal::FeatureSinks sinks{
      &f->float_list, &f->int64_list,
      [](void* ctx, std::string_view v) {
        static_cast<std::vector<std::string>*>(ctx)->emplace_back(v);
      },
      &f->bytes_list};
  return example_internal::DecodeFeatureInto(data, &f->kind, sinks);
}

Status DecodeFeatureMap(std::string_view features, FeatureMap* out) {
  return example_internal::ForEachMapEntry(
      features, [&](std::string_view key, std::string_view value) {
        return DecodeFeature(value, &(*out)[std::string(key)]);
      });
}

}  // namespace

void EncodeExample(const Example& example, std::string* out) {
  out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
  PutVarint(FeaturesSize(example.features), out);
  PutFeatures(example.features, out);
}

void EncodeSortedFeatures(const std::vector<NamedFeature>& features, std::string* out) {
  size_t total = 0;
  for (const auto& nf : features) {
    const size_t e = EntrySize(nf.name, FeatureSize(*nf.feature));
    total += 1 + VarintSize(e) + e;
  }
  out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
  PutVarint(total, out);
  for (const auto& nf : features) {
    PutEntryHeader(nf.name, FeatureSize(*nf.feature), out);
    PutFeature(*nf.feature, out);
  }
}

void EncodeSequenceExample(const SequenceExample& example, std::string* out) {
  out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
  PutVarint(FeaturesSize(example.context), out);
  PutFeatures(example.context, out);

  size_t lists_size = 0;
  for (const auto& [key, list] : example.feature_lists) {
    const size_t e = EntrySize(key, FeatureListSize(list));
    lists_size += 1 + VarintSize(e) + e;
  }
  out->push_back(static_cast<char>(MakeTag(2, wire::kLen)));
  PutVarint(lists_size, out);
  for (const auto& [key, list] : example.feature_lists) {
    PutEntryHeader(key, FeatureListSize(list), out);
    for (const auto& f : list) {
      out->push_back(static_cast<char>(MakeTag(1, wire::kLen)));
      PutVarint(FeatureSize(f), out);
      PutFeature(f, out);
    }
  }
}

Status DecodeExample(std::string_view data, Example* example) {
  example->features.clear();
  return example_internal::ForEachFeatureEntry(
      data, [&](std::string_view key, std::string_view value) {
        return DecodeFeature(value, &example->features[std::string(key)]);
      });
}

Status DecodeSequenceExample(std::string_view data, SequenceExample* example) {
  example->context.clear();
  example->feature_lists.clear();
  wire::Reader r(data);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in SequenceExample");
    std::string_view body;
    if (type == wire::kLen && (field == 1 || field == 2)) {
      if (!r.ReadLengthDelimited(&body))
        return Malformed("bad length in SequenceExample");
    } else {
      if (!r.Skip(type)) return Malformed("bad field in SequenceExample");
      continue;
    }
    if (field == 1) {
      RETURN_NOT_OK(DecodeFeatureMap(body, &example->context));
      continue;
    }
    RETURN_NOT_OK(example_internal::ForEachMapEntry(
        body, [&](std::string_view key, std::string_view list) -> Status {
          auto& features = example->feature_lists[std::string(key)];
          features.clear();
          wire::Reader lr(list);
          while (!lr.done()) {
            uint32_t f;
            wire::WireType t;
            if (!lr.ReadTag(&f, &t)) return Malformed("bad tag in FeatureList");
            if (f == 1 && t == wire::kLen) {
              std::string_view one;
              if (!lr.ReadLengthDelimited(&one))
                return Malformed("bad length in FeatureList");
              RETURN_NOT_OK(DecodeFeature(one, &features.emplace_back()));
            } else if (!lr.Skip(t)) {
              return Malformed("bad field in FeatureList");
            }
          }
          return Status::OK();
        }));
  }
  return Status::OK();
}

namespace example_internal {
namespace {

Status AppendFloats(std::string_view list, std::vector<float>* out) {
  wire::Reader r(list);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in FloatList");
    if (field == 1 && type == wire::kLen) {
      std::string_view packed;
      if (!r.ReadLengthDelimited(&packed) || packed.size() % 4 != 0) {
        return Malformed("bad packed FloatList");
      }
      if (packed.empty()) continue;  // memcpy must not see a null pointer
      const size_t old = out->size();
      out->resize(old + packed.size() / 4);
      std::memcpy(out->data() + old, packed.data(), packed.size());
    } else if (field == 1 && type == wire::kFixed32) {
      uint32_t bits;
      if (!r.ReadFixed32(&bits)) return Malformed("truncated FloatList value");
      float v;
      std::memcpy(&v, &bits, 4);
      out->push_back(v);
    } else if (!r.Skip(type)) {
      return Malformed("bad field in FloatList");
    }
  }
  return Status::OK();
}

Status AppendInts(std::string_view list, std::vector<int64_t>* out) {
  wire::Reader r(list);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in Int64List");
    uint64_t v;
    if (field == 1 && type == wire::kLen) {
      std::string_view packed;
      if (!r.ReadLengthDelimited(&packed)) return Malformed("bad packed Int64List");
      wire::Reader pr(packed);
      while (!pr.done()) {
        if (!pr.ReadVarint(&v)) return Malformed("bad varint in packed Int64List");
        out->push_back(static_cast<int64_t>(v));
      }
    } else if (field == 1 && type == wire::kVarint) {
      if (!r.ReadVarint(&v)) return Malformed("bad varint in Int64List");
      out->push_back(static_cast<int64_t>(v));
    } else if (!r.Skip(type)) {
      return Malformed("bad field in Int64List");
    }
  }
  return Status::OK();
}

Status ForEachBytes(std::string_view list, const FeatureSinks& sinks) {
  wire::Reader r(list);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in BytesList");
    if (field == 1 && type == wire::kLen) {
      std::string_view v;
      if (!r.ReadLengthDelimited(&v)) return Malformed("bad length in BytesList");
      sinks.on_bytes(sinks.bytes_ctx, v);
    } else if (!r.Skip(type)) {
      return Malformed("bad field in BytesList");
    }
  }
  return Status::OK();
}

// Calls fn(kind, list_bytes, offset_after) for each oneof member in wire order.
template <typename Fn>
Status ForEachList(std::string_view feature, Fn&& fn) {
  wire::Reader r(feature);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in Feature");
    if (field >= 1 && field <= 3 && type == wire::kLen) {
      std::string_view list;
      if (!r.ReadLengthDelimited(&list)) return Malformed("bad length in Feature");
      RETURN_NOT_OK(fn(static_cast<FeatureKind>(field), list));
    } else if (!r.Skip(type)) {
      return Malformed("bad field in Feature");
    }
  }
  return Status::OK();
}

}  // namespace

Status DecodeFeatureInto(std::string_view feature, FeatureKind* kind,
                         const FeatureSinks& sinks) {
  // Protobuf semantics: the last member of the oneof wins, and consecutive
  // occurrences of that member merge (their values concatenate).
  FeatureKind final_kind = FeatureKind::kNone;
  size_t run_start = 0, index = 0;
  RETURN_NOT_OK(ForEachList(feature, [&](FeatureKind k, std::string_view) {
    if (k != final_kind) run_start = index;
    final_kind = k;
    ++index;
    return Status::OK();
  }));
  *kind = final_kind;
  if (final_kind == FeatureKind::kNone) return Status::OK();
  index = 0;
  return ForEachList(feature, [&](FeatureKind k, std::string_view list) -> Status {
    if (index++ < run_start) return Status::OK();
    switch (k) {
      case FeatureKind::kFloat: return AppendFloats(list, sinks.floats);
      case FeatureKind::kInt64: return AppendInts(list, sinks.ints);
      case FeatureKind::kBytes: return ForEachBytes(list, sinks);
      case FeatureKind::kNone: break;
    }
    return Status::OK();
  });
}

Status PeekFeature(std::string_view feature, FeatureKind* kind, size_t* count) {
  std::vector<float> floats;
  std::vector<int64_t> ints;
  size_t n_bytes = 0;
  FeatureSinks sinks{&floats, &ints,
                     [](void* ctx, std::string_view) { ++*static_cast<size_t*>(ctx); },
                     &n_bytes};
  RETURN_NOT_OK(DecodeFeatureInto(feature, kind, sinks));
  *count = n_bytes + floats.size() + ints.size();
  return Status::OK();
}

}  // namespace example_internal
}  // namespace sparktf
