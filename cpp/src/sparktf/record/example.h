// tf.train.Example and tf.train.SequenceExample, coded by hand on the protobuf
// wire format (docs/formats/example.md) so that the core links no protobuf.
//
// Encoding writes what TensorFlow's deterministic serialization writes: map
// entries sorted by key, packed float and int64 lists, every entry with its key
// and value. Decoding accepts anything protobuf accepts for these messages:
// packed or unpacked lists, fields in any order, unknown fields, repeated
// messages merged, the last oneof member winning. Malformed bytes are
// InvalidArgument, never a crash or an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/status.h"

namespace sparktf {

enum class FeatureKind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };
std::string_view FeatureKindName(FeatureKind kind);  // "bytes_list", ...

// One tf.train.Feature: at most one of the lists, selected by kind.
struct Feature {
  FeatureKind kind = FeatureKind::kNone;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;

  size_t size() const;  // number of values in the selected list
  bool operator==(const Feature&) const = default;
};

using FeatureMap = std::map<std::string, Feature>;  // ordered: encoding sorts keys

struct Example {
  FeatureMap features;
  bool operator==(const Example&) const = default;
};

struct SequenceExample {
  FeatureMap context;
  std::map<std::string, std::vector<Feature>> feature_lists;
  bool operator==(const SequenceExample&) const = default;
};

void EncodeExample(const Example& example, std::string* out);

// A feature by reference, for encoding without building a FeatureMap.
struct NamedFeature {
  std::string_view name;
  const Feature* feature;
};
// Appends the Example holding `features`, which must be sorted by name and
// unique (EncodeExample's output for the equivalent map).
void EncodeSortedFeatures(const std::vector<NamedFeature>& features, std::string* out);
void EncodeSequenceExample(const SequenceExample& example, std::string* out);

Status DecodeExample(std::string_view data, Example* example);
Status DecodeSequenceExample(std::string_view data, SequenceExample* example);

// Lower-level pieces shared with the columnar decoder.
namespace example_internal {

// Calls on_entry(key, feature_bytes) for every feature map entry in a
// serialized Example, in wire order (a key may repeat; the last one wins).
template <typename OnEntry>
Status ForEachFeatureEntry(std::string_view example, OnEntry&& on_entry);

// Decodes one serialized Feature's final oneof member: *kind gets the kind and
// the values are appended to the matching output (others untouched).
struct FeatureSinks {
  std::vector<float>* floats;
  std::vector<int64_t>* ints;
  // Called for each bytes value.
  void (*on_bytes)(void* ctx, std::string_view value);
  void* bytes_ctx;
};
Status DecodeFeatureInto(std::string_view feature, FeatureKind* kind,
                         const FeatureSinks& sinks);
// The kind of a serialized Feature and its value count, without copying values.
Status PeekFeature(std::string_view feature, FeatureKind* kind, size_t* count);

}  // namespace example_internal
}  // namespace sparktf

#include "sparktf/record/example_inl.h"
