// Rows -> columnar batches (docs/formats/batch.md), as a feeding task builds
// them: a few hundred rows at a time, from Python objects (through the
// bindings, which only read the objects) or from PySpark's pickled row
// batches read without Python (PickledRows).
//
// A batch's first row fixes its columns (their number and names) and each
// column's signature: its value type and its per-row shape, as a scalar, a
// sequence of numbers (a list in Python) or an array (a numpy array, with its
// dtype and shape). Every later row must match; a mismatch is InvalidArgument
// naming the row and the column. Clear starts the next batch, which is typed
// anew by its own first row, in buffers that keep their memory.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/batch.h"
#include "sparktf/feed/pickle_rows.h"

namespace sparktf::feed {

enum class ColumnShape : uint8_t { kScalar, kSequence, kArray };

// A column's value type and per-row shape. `inner`: the dims of one row's
// value (empty for a scalar; {n} for a sequence of n; an array's shape).
struct ColumnSignature {
  ColumnShape shape = ColumnShape::kScalar;
  ColumnType type = ColumnType::kFloat32;
  std::vector<uint64_t> inner;
  bool operator==(const ColumnSignature&) const = default;
};

// One column of a batch, appended a row at a time. The writer of a row calls
// Start (on the batch's first row), then puts that row's value, then EndRow.
class ColumnBuilder {
 public:
  explicit ColumnBuilder(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  uint64_t rows() const { return rows_; }
  const ColumnSignature& signature() const { return sig_; }

  // Types the column for this batch; only while it has no rows.
  void Start(ColumnSignature s) { sig_ = std::move(s); }
  // Whether a value of signature `s` can be the next row's.
  bool Accepts(const ColumnSignature& s) const { return rows_ == 0 || s == sig_; }

  // The values of a row of a number column (one for a scalar, inner[0] for a
  // sequence), each of the column's type: Put* or, filled in place, Extend.
  void PutFloat32(float v);
  void PutInt64(int64_t v);
  void PutBool(bool v) { data_.push_back(v ? 1 : 0); }
  // Room for `values` more values of the column's type, to be written through
  // the pointer (valid until the next put); Unextend takes back the last ones.
  char* Extend(size_t values);
  void Unextend(size_t values) { data_.resize(data_.size() - values * ItemSize(sig_.type)); }
  // The value of a row of a kBytes scalar column; `is_str`: it was text (a
  // Python str), and the column is marked text while every value is.
  void PutText(std::string_view v, bool is_str = false) {
    data_.append(v);
    offsets_.push_back(data_.size());
    all_str_ = (rows_ == 0 || all_str_) && is_str;
  }
  // A row of an array column: InvalidArgument unless `type` and `shape` are
  // the column's and `bytes` holds exactly those values.
  Status PutArray(ColumnType type, std::span<const uint64_t> shape, std::string_view bytes);
  // InvalidArgument unless a sequence of `n` values fits this column.
  Status CheckSequence(uint64_t n) const;
  void EndRow() { ++rows_; }

  // The signature a pickled value gets when AppendParsed appends it as the
  // bindings append the Python object it stands for; nullopt for values only
  // Python reads. Numbers, str/bytes, non-empty lists and tuples of floats,
  // of ints or of bools, and numpy arrays of at least one dimension.
  static std::optional<ColumnSignature> SignatureOf(const PickledRows& r, const PickleValue& v);
  // Appends a whole row: a value whose SignatureOf this column Accepts (and
  // after Start on the batch's first row).
  void AppendParsed(const PickledRows& r, const PickleValue& v);

  // "row R, column 'name': what" as InvalidArgument (R: the row being put).
  Status Error(std::string_view what) const;

  size_t nbytes() const { return data_.size() + offsets_.size() * 8; }
  // Empties the column for the next batch, keeping its buffers' memory.
  void Clear();
  // The column as a batch encodes it; valid until the next change.
  ColumnView View();

 private:
  std::string name_;
  ColumnSignature sig_;
  uint64_t rows_ = 0;
  std::string data_;
  std::vector<uint64_t> offsets_{0};  // kBytes: the end of each row's value
  std::string payload_;               // kBytes: offsets then data, as encoded
  bool all_str_ = false;              // kBytes: every value so far was a str
};

class RowBatcher {
 public:
  // names: the columns' names; without them, the names a batch's first row
  // carries (pyspark Rows' fields) or "0", "1", ...
  explicit RowBatcher(std::optional<std::vector<std::string>> names = std::nullopt)
      : names_(std::move(names)) {}

  // Fixes the columns of a new batch (rows() == 0): `width` values per row,
  // held in a tuple (`tuple_rows`) or one bare value per row; `fields`, the
  // names the row carries. InvalidArgument when the names do not fit.
  Status StartBatch(bool tuple_rows, size_t width,
                    std::optional<std::vector<std::string>> fields = std::nullopt);
  bool tuple_rows() const { return tuple_rows_; }
  size_t width() const { return builders_.size(); }
  ColumnBuilder& column(size_t c) { return builders_[c]; }
  // Counts a row whose every column has been put.
  void EndRow() { ++rows_; }

  // Appends the rows of one pickled list of rows (a batch of PySpark's pickle
  // serializer) and returns how many; -1, with nothing appended, when the
  // pickle holds values only Python reads, or rows that differ in structure
  // from each other or from the batch so far (then unpickle it and append
  // the objects, which handles them or says what is wrong).
  int64_t AppendPickled(std::string_view pickle);

  uint64_t rows() const { return rows_; }
  size_t nbytes() const;
  // The rows so far as the parts of one encoded batch, pointing into this
  // batcher's buffers: valid until the next change. InvalidArgument if no rows.
  Status Encode(BatchParts* out);
  // Starts a new batch.
  void Clear();
  // The rows so far as one encoded batch; starts a new batch.
  Result<std::string> Take();

 private:
  std::optional<std::vector<std::string>> names_;
  std::vector<ColumnBuilder> builders_;
  PickledRows pickled_;                     // AppendPickled's reader, kept for its memory
  std::vector<ColumnSignature> signatures_;  // AppendPickled's, likewise
  bool tuple_rows_ = false;
  uint64_t rows_ = 0;
};

}  // namespace sparktf::feed
