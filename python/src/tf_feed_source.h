// The C ABI between sparktf._native, which owns a node's FeedReader, and the TensorFlow
// op library libsparktf_tf_ops.so (op SparktfFeedNext), which TensorFlow loads on its
// own: the op gets a source and its next function as two addresses (FeedReader's
// tf_source() in Python) and makes each batch's columns its output tensors.
// Both sides come from one build of one wheel; the struct never crosses builds.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// One column of a batch: `type` is a sparktf::feed::ColumnType, dims[0] the rows.
// `data` is valid while emit runs; a sink that keeps it longer (a tensor over it) calls
// hold(owner) and later release() on what hold returned, on any thread.
struct SparktfFeedColumn {
  int32_t type;
  int32_t rank;
  const uint64_t* dims;
  const void* data;
  uint64_t bytes;
  const void* owner;
  void* (*hold)(const void* owner);
  void (*release)(void* held);
};

// Called once per column, in the feed's column order, while the batch is valid.
typedef void (*SparktfFeedEmit)(void* sink, int32_t index, const SparktfFeedColumn* column);

// Takes the next batch of exactly `rows` rows (FeedReader::NextSlice, lockstep included).
// Returns 1 after emitting every column, 0 at the end of the feed, and otherwise the
// negated sparktf::StatusCode with a message in `error` (NUL-terminated, truncated).
typedef int32_t (*SparktfFeedNextFn)(void* source, uint64_t rows, int64_t timeout_ms,
                                     void* sink, SparktfFeedEmit emit, char* error,
                                     size_t error_size);

}  // extern "C"
