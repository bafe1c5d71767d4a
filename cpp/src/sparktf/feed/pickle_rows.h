// Reading PySpark's pickled row batches without Python (docs/formats/feed.md).
//
// An RDD built in Python keeps its partitions as batches of rows, each one
// pickle of a Python list (PySpark's batched pickle serializer, protocol 2-5).
// Unpickling them makes a Python object of every value: for rows of 784
// floats that is most of a feeding task's work. PickledRows reads such a
// pickle straight into values that point into it, for the kinds of values a
// feed carries: None, bool, int (64-bit), float, str, bytes, lists and tuples
// of these, and numpy arrays as numpy pickles them (numpy.dtype and
// _frombuffer, little-endian numbers and bool, C order).
//
// Anything else (dicts, other classes, pyspark Rows, big ints, Fortran or
// big-endian arrays, ...) is Unimplemented: the caller unpickles that batch in
// Python instead. Malformed input is InvalidArgument; every length, index and
// stack access is checked, so no input reads out of bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/batch.h"

namespace sparktf::feed {

struct PickleValue {
  enum class Kind : uint8_t {
    kNone, kBool, kInt, kFloat, kStr, kBytes, kByteArray, kList, kTuple, kArray,
    kDtype, kCallable,  // intermediate: only inside numpy's own pickles
  };
  Kind kind = Kind::kNone;
  uint32_t len = 0;  // kStr/kBytes/kByteArray: bytes
  union {
    int64_t i;      // kBool (0/1), kInt
    double f;       // kFloat
    uint64_t ref;   // kStr/kBytes/kByteArray: offset in the input; kList/kTuple:
                    // container; kArray: array; kDtype: dtype; kCallable: which
  };
  PickleValue() : i(0) {}
};
static_assert(sizeof(PickleValue) == 16);

struct PickledArray {
  ColumnType type;
  std::vector<uint64_t> shape;
  std::string_view data;  // into the input, C order
};

class PickledRows {
 public:
  // Reads one pickle whose object is a list (the rows), of less than 4 GiB.
  // The values read stay valid until the next Parse and point into `pickle`,
  // which must outlive them.
  Status Parse(std::string_view pickle);

  // Rows of the last successful Parse (none after a failed one).
  size_t rows() const { return root_.kind == PickleValue::Kind::kList ? Items(root_).size() : 0; }
  const PickleValue& row(size_t i) const { return Items(root_)[i]; }
  // The items of a kList or kTuple value.
  std::span<const PickleValue> Items(const PickleValue& v) const {
    return containers_[static_cast<size_t>(v.ref)];
  }
  // The bytes of a kStr (UTF-8), kBytes or kByteArray value.
  std::string_view Text(const PickleValue& v) const {
    return input_.substr(static_cast<size_t>(v.ref), static_cast<size_t>(v.len));
  }
  const PickledArray& Array(const PickleValue& v) const { return arrays_[static_cast<size_t>(v.ref)]; }

 private:
  Status Run();
  // Pushes a new list or tuple holding stack_[from:] in place of them.
  void NewContainer(PickleValue::Kind kind, size_t from);
  // Values on the stack above the innermost MARK (what an opcode may pop).
  size_t Available() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  Status Reduce();
  Status Build();

  std::string_view input_;
  PickleValue root_;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::vector<PickleValue> memo_;
  // Containers and arrays of this parse; their memory is kept for the next.
  std::vector<std::vector<PickleValue>> containers_;
  size_t containers_used_ = 0;
  std::vector<PickledArray> arrays_;
  struct Dtype {
    ColumnType type;
    bool checked;  // its state (byte order, no fields) was read and is supported
  };
  std::vector<Dtype> dtypes_;
};

}  // namespace sparktf::feed
