// Shared by the binding files: one init function per area, and the bridge
// from core Status to the typed exceptions of sparktf.errors.
#pragma once

#include <nanobind/nanobind.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/arrow_feed.h"
#include "sparktf/feed/ring.h"
#include "sparktf/feed/stream.h"

namespace sparktf::python {

namespace nb = nanobind;

// Carries a non-OK Status across the C++ -> Python boundary; the translator
// registered by InitErrors raises sparktf.errors.<CodeName>(message).
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& st) {
  if (!st.ok()) throw StatusError(st);
}

template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(r).ValueOrDie();
}

// Python timeouts are float seconds.
inline std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// An encoded feed batch -> (rows, {name: numpy array, or list of bytes}); the
// arrays view the batch, which they keep alive. With `with_row_arrays`, a third
// item: the names of the columns whose rows were numpy arrays (kRowArrays).
nb::tuple BatchToColumns(std::string batch, bool with_row_arrays = false);
// The same for a slice: numpy arrays view its rows (the slice's owner is kept
// alive by them), bytes columns become lists.
nb::tuple SliceToColumns(feed::BatchSlice slice, bool with_row_arrays = false);
// Hands the rows appended to a _native.RowBatcher to `push` as the parts of
// one encoded batch, pointing into the batcher's buffers (no copy, no Python
// bytes), then starts a new batch in it. Returns what `push` returned.
Status PushRowBatch(nb::handle batcher, const std::function<Status(feed::MessageParts)>& push);

// An Arrow record batch of Python (a pyarrow.RecordBatch, or anything with
// __arrow_c_array__) seen through the Arrow C data interface: the structs stay
// valid, and the batch's memory alive, while this holds its capsules.
class ArrowBatchView {
 public:
  explicit ArrowBatchView(nb::handle batch);
  const ArrowSchema& schema() const { return *schema_; }
  const ArrowArray& array() const { return *array_; }

 private:
  nb::object capsules_;
  const ArrowSchema* schema_ = nullptr;
  const ArrowArray* array_ = nullptr;
};

void InitErrors(nb::module_& m);
void InitRecords(nb::module_& m);
void InitCluster(nb::module_& m);
void InitFeed(nb::module_& m);
void InitFeedService(nb::module_& m);
void InitFs(nb::module_& m);

}  // namespace sparktf::python
