// Internal: template definitions for example.h.
#pragma once

#include "sparktf/record/wire_internal.h"

namespace sparktf::example_internal {

inline Status Malformed(std::string_view what) {
  return Status::InvalidArgument("malformed tf.train.Example: " + std::string(what));
}

// Splits a map entry (key = field 1, value = field 2) into its parts.
inline Status SplitMapEntry(std::string_view entry, std::string_view* key,
                            std::string_view* value) {
  *key = {};
  *value = {};
  wire::Reader r(entry);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in feature map entry");
    if ((field == 1 || field == 2) && type == wire::kLen) {
      if (!r.ReadLengthDelimited(field == 1 ? key : value)) {
        return Malformed("bad length in feature map entry");
      }
    } else if (!r.Skip(type)) {
      return Malformed("bad field in feature map entry");
    }
  }
  return Status::OK();
}

// Calls on_entry for each map entry of a serialized Features message.
template <typename OnEntry>
Status ForEachMapEntry(std::string_view features, OnEntry&& on_entry) {
  wire::Reader r(features);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in Features");
    if (field == 1 && type == wire::kLen) {
      std::string_view entry, key, value;
      if (!r.ReadLengthDelimited(&entry)) return Malformed("bad length in Features");
      RETURN_NOT_OK(SplitMapEntry(entry, &key, &value));
      RETURN_NOT_OK(on_entry(key, value));
    } else if (!r.Skip(type)) {
      return Malformed("bad field in Features");
    }
  }
  return Status::OK();
}

template <typename OnEntry>
Status ForEachFeatureEntry(std::string_view example, OnEntry&& on_entry) {
  wire::Reader r(example);
  while (!r.done()) {
    uint32_t field;
    wire::WireType type;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag in Example");
    if (field == 1 && type == wire::kLen) {
      std::string_view features;
      if (!r.ReadLengthDelimited(&features)) return Malformed("bad length in Example");
      RETURN_NOT_OK(ForEachMapEntry(features, on_entry));
    } else if (!r.Skip(type)) {
      return Malformed("bad field in Example");
    }
  }
  return Status::OK();
}

}  // namespace sparktf::example_internal
