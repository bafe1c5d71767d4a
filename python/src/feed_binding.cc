// sparktf._native feed API: shared-memory rings and columnar batches.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>

#include "bindings.h"
#include "sparktf/feed/batch.h"
#include "sparktf/feed/pickle_rows.h"
#include "sparktf/feed/ring.h"

namespace sparktf::python {
namespace {

using namespace sparktf::feed;

class PyRing {
 public:
  explicit PyRing(std::unique_ptr<Ring> r) : r_(std::move(r)) {}
  void Push(nb::bytes message, double timeout) {
    std::string_view m(message.c_str(), message.size());
    Status st;
    {
      nb::gil_scoped_release release;
      st = Live()->Push(m, Ms(timeout));
    }
    ThrowIfError(st);
  }
  // The next message, or None once input is closed and drained.
  nb::object Pop(double timeout) {
    std::string out;
    Status st;
    {
      nb::gil_scoped_release release;
      st = Live()->Pop(&out, Ms(timeout));
    }
    if (st.IsOutOfRange()) return nb::none();
    ThrowIfError(st);
    return nb::bytes(out.data(), out.size());
  }
  void CloseInput() { Live()->CloseInput(); }
  void CloseConsumer(const std::string& reason) { Live()->CloseConsumer(reason); }
  // Detaches (producer) or closes and unlinks (consumer). Idempotent.
  void Close() { r_.reset(); }
  std::string name() { return Live()->name(); }
  nb::dict Stats() {
    RingStats s = Live()->stats();
    nb::dict d;
    d["messages_pushed"] = s.messages_pushed;
    d["messages_popped"] = s.messages_popped;
    d["bytes_pushed"] = s.bytes_pushed;
    return d;
  }

 private:
  Ring* Live() {
    if (!r_) throw StatusError(Status::InvalidArgument("ring is closed"));
    return r_.get();
  }
  std::unique_ptr<Ring> r_;
};

ColumnType TypeOfFormat(std::string_view fmt, size_t itemsize, const std::string& name) {
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')) fmt.remove_prefix(1);
  const char c = fmt.size() == 1 ? fmt[0] : '?';
  if (c == 'f' && itemsize == 4) return ColumnType::kFloat32;
  if (c == 'd' && itemsize == 8) return ColumnType::kFloat64;
  if ((c == 'i' || c == 'l') && itemsize == 4) return ColumnType::kInt32;
  if ((c == 'l' || c == 'q') && itemsize == 8) return ColumnType::kInt64;
  if (c == 'B' && itemsize == 1) return ColumnType::kUInt8;
  if (c == '?' && itemsize == 1 && fmt == "?") return ColumnType::kBool;
  throw StatusError(Status::InvalidArgument("column '" + name + "': unsupported array format '" +
                                            std::string(fmt) + "'"));
}

// Builds one column of a batch from the values of successive rows. The first
// value fixes the column's type and per-row shape; later values must match.
class ColumnBuilder {
 public:
  explicit ColumnBuilder(std::string name) : name_(std::move(name)) {}

  void Append(PyObject* v, size_t row) {
    if (rows_ == 0) Start(v);
    switch (shape_kind_) {
      case kScalar: AppendScalar(v, row); break;
      case kSequence: AppendSequence(v, row); break;
      case kArray: AppendArray(v, row); break;
    }
    ++rows_;
  }

  // A column's value type and per-row shape, as the first value fixes them.
  struct Signature {
    int shape_kind;
    ColumnType type;
    std::vector<uint64_t> inner;
    bool operator==(const Signature&) const = default;
  };

  // The signature Append gives a value like `v` (a value read from a pickle
  // without Python), when AppendParsed appends it exactly as Append appends
  // the Python object; nullopt for anything else (then the rows go through
  // Python): numbers, str/bytes, non-empty lists and tuples of floats, of
  // ints or of bools, and numpy arrays of at least one dimension.
  static std::optional<Signature> SignatureOf(const PickledRows& r, const PickleValue& v) {
    using K = PickleValue::Kind;
    switch (v.kind) {
      case K::kFloat: return Signature{kScalar, ColumnType::kFloat32, {}};
      case K::kInt: return Signature{kScalar, ColumnType::kInt64, {}};
      case K::kBool: return Signature{kScalar, ColumnType::kBool, {}};
      case K::kStr:
      case K::kBytes: return Signature{kScalar, ColumnType::kBytes, {}};
      case K::kList:
      case K::kTuple: {
        const auto items = r.Items(v);
        if (items.empty()) return std::nullopt;
        const K k = items[0].kind;
        if (k != K::kFloat && k != K::kInt && k != K::kBool) return std::nullopt;
        for (const PickleValue& item : items) {
          if (item.kind != k) return std::nullopt;
        }
        const ColumnType t = k == K::kFloat ? ColumnType::kFloat32
                             : k == K::kInt ? ColumnType::kInt64
                                            : ColumnType::kBool;
        return Signature{kSequence, t, {static_cast<uint64_t>(items.size())}};
      }
      case K::kArray: return Signature{kArray, r.Array(v).type, r.Array(v).shape};
      default: return std::nullopt;
    }
  }
  // Whether values of signature `s` can be appended now.
  bool Accepts(const Signature& s) const {
    return rows_ == 0 || (s.shape_kind == shape_kind_ && s.type == type_ && s.inner == inner_);
  }
  // Appends a value whose signature `s` this column Accepts.
  void AppendParsed(const PickledRows& r, const PickleValue& v, const Signature& s) {
    if (rows_ == 0) {
      shape_kind_ = static_cast<ShapeKind>(s.shape_kind);
      type_ = s.type;
      inner_ = s.inner;
    }
    switch (shape_kind_) {
      case kScalar:
        if (type_ == ColumnType::kBytes) {
          data_.append(r.Text(v));
          offsets_.push_back(data_.size());
        } else {
          PutParsed(std::span<const PickleValue>(&v, 1));
        }
        break;
      case kSequence:
        PutParsed(r.Items(v));
        break;
      case kArray:
        data_.append(r.Array(v).data);
        break;
    }
    ++rows_;
  }

  const std::string& name() const { return name_; }
  size_t nbytes() const { return data_.size() + offsets_.size() * 8; }
  // Empties the column for the next batch (whose first value types it anew),
  // keeping the memory of its buffers.
  void Clear() {
    rows_ = 0;
    inner_.clear();
    array_format_.clear();
    data_.clear();
    offsets_.resize(1);
    payload_.clear();
  }

  ColumnView View() {
    ColumnView c;
    c.name = name_;
    c.type = type_;
    c.dims = {rows_};
    c.dims.insert(c.dims.end(), inner_.begin(), inner_.end());
    if (type_ == ColumnType::kBytes) {
      payload_.assign(reinterpret_cast<const char*>(offsets_.data()), offsets_.size() * 8);
      payload_ += data_;
      c.data = payload_;
    } else {
      c.data = data_;
    }
    return c;
  }

 private:
  enum ShapeKind { kScalar, kSequence, kArray };

  // Numbers of this column's type, read from a pickle (as PutNumber).
  void PutParsed(std::span<const PickleValue> values) {
    const size_t at = data_.size();
    data_.resize(at + values.size() * ItemSize(type_));
    char* out = data_.data() + at;
    switch (type_) {
      case ColumnType::kFloat32:
        for (const PickleValue& v : values) {
          const float f = static_cast<float>(v.f);
          std::memcpy(out, &f, 4);
          out += 4;
        }
        return;
      case ColumnType::kInt64:
        for (const PickleValue& v : values) {
          std::memcpy(out, &v.i, 8);
          out += 8;
        }
        return;
      case ColumnType::kBool:
        for (const PickleValue& v : values) *out++ = v.i ? 1 : 0;
        return;
      default: return;  // never: SignatureOf gives only these for numbers
    }
  }

  [[noreturn]] void Fail(size_t row, const std::string& what) const {
    throw StatusError(Status::InvalidArgument("row " + std::to_string(row) + ", column '" +
                                              name_ + "': " + what));
  }

  static bool IsText(PyObject* v) { return PyBytes_Check(v) || PyUnicode_Check(v); }

  // numpy scalars expose a 0-d buffer; they are scalars here.
  static bool IsZeroDim(PyObject* v) {
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_ND) != 0) {
      PyErr_Clear();
      return false;
    }
    const bool zero = view.ndim == 0;
    PyBuffer_Release(&view);
    return zero;
  }

  static ColumnType ScalarType(PyObject* v) {
    if (PyBool_Check(v)) return ColumnType::kBool;
    if (PyLong_Check(v)) return ColumnType::kInt64;
    if (PyFloat_Check(v)) return ColumnType::kFloat32;
    if (IsText(v)) return ColumnType::kBytes;
    return ColumnType::kBytes;  // checked when appended
  }

  void Start(PyObject* v) {
    if (PyList_Check(v) || PyTuple_Check(v)) {
      shape_kind_ = kSequence;
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
      inner_ = {static_cast<uint64_t>(n)};
      type_ = ColumnType::kFloat32;
      if (n > 0) {
        PyObject* first = PySequence_Fast_GET_ITEM(v, 0);
        type_ = PyFloat_Check(first) ? ColumnType::kFloat32
                : PyBool_Check(first) ? ColumnType::kBool
                : PyLong_Check(first) ? ColumnType::kInt64
                                      : ColumnType::kBytes;
        if (type_ == ColumnType::kBytes) Fail(0, "lists must hold numbers");
      }
    } else if (!IsText(v) && PyObject_CheckBuffer(v) && !IsZeroDim(v)) {
      shape_kind_ = kArray;
      Py_buffer view;
      if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        Fail(0, "arrays must be C-contiguous");
      }
      type_ = TypeOfFormat(view.format ? view.format : "B", static_cast<size_t>(view.itemsize),
                           name_);
      for (int d = 0; d < view.ndim; ++d) inner_.push_back(static_cast<uint64_t>(view.shape[d]));
      PyBuffer_Release(&view);
    } else if (nb::hasattr(v, "item") && nb::hasattr(v, "dtype")) {
      shape_kind_ = kScalar;  // a numpy scalar: typed by its Python value
      nb::object item = nb::handle(v).attr("item")();
      type_ = ScalarType(item.ptr());
    } else {
      shape_kind_ = kScalar;
      type_ = ScalarType(v);
      if (!IsText(v) && !PyLong_Check(v) && !PyFloat_Check(v)) {
        Fail(0, std::string("unsupported value of type ") + Py_TYPE(v)->tp_name);
      }
    }
  }

  void PutNumber(PyObject* v, size_t row) {
    switch (type_) {
      case ColumnType::kFloat32: {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          Fail(row, "expected a number");
        }
        const float f = static_cast<float>(d);
        data_.append(reinterpret_cast<const char*>(&f), 4);
        return;
      }
      case ColumnType::kInt64:
      case ColumnType::kBool: {
        if (!PyLong_Check(v)) Fail(row, "expected an int");
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) Fail(row, "int does not fit int64");
        if (type_ == ColumnType::kBool) {
          data_.push_back(x ? 1 : 0);
        } else {
          const int64_t i = x;
          data_.append(reinterpret_cast<const char*>(&i), 8);
        }
        return;
      }
      default: Fail(row, "unexpected value");
    }
  }

  void AppendScalar(PyObject* v, size_t row) {
    nb::object item;
    if (!PyLong_Check(v) && !PyFloat_Check(v) && !IsText(v) && nb::hasattr(v, "item")) {
      item = nb::handle(v).attr("item")();
      v = item.ptr();
    }
    if (type_ == ColumnType::kBytes) {
      if (PyBytes_Check(v)) {
        data_.append(PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
      } else if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        const char* s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) throw nb::python_error();
        data_.append(s, n);
      } else {
        Fail(row, "expected bytes or str");
      }
      offsets_.push_back(data_.size());
      return;
    }
    PutNumber(v, row);
  }

  void AppendSequence(PyObject* v, size_t row) {
    if (!PyList_Check(v) && !PyTuple_Check(v)) Fail(row, "expected a list like the first row's");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (static_cast<uint64_t>(n) != inner_[0]) {
      Fail(row, "has " + std::to_string(n) + " values but the first row had " +
                    std::to_string(inner_[0]));
    }
    PyObject** items = PySequence_Fast_ITEMS(v);
    if (type_ == ColumnType::kFloat32) {  // the common case, without a call per value
      const size_t at = data_.size();
      data_.resize(at + static_cast<size_t>(n) * 4);
      char* out = data_.data() + at;
      Py_ssize_t i = 0;
      for (; i < n && PyFloat_CheckExact(items[i]); ++i) {
        const float f = static_cast<float>(PyFloat_AS_DOUBLE(items[i]));
        std::memcpy(out + i * 4, &f, 4);
      }
      if (i == n) return;
      data_.resize(at + static_cast<size_t>(i) * 4);  // ints or numpy scalars: the slow path
      for (; i < n; ++i) PutNumber(items[i], row);
      return;
    }
    for (Py_ssize_t i = 0; i < n; ++i) PutNumber(items[i], row);
  }

  void AppendArray(PyObject* v, size_t row) {
    Py_buffer view;
    if (IsText(v) || PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      Fail(row, "expected a C-contiguous array like the first row's");
    }
    struct Release {
      Py_buffer* b;
      ~Release() { PyBuffer_Release(b); }
    } release{&view};
    bool same = static_cast<size_t>(view.ndim) == inner_.size();
    for (int d = 0; same && d < view.ndim; ++d) {
      same = static_cast<uint64_t>(view.shape[d]) == inner_[static_cast<size_t>(d)];
    }
    const char* format = view.format ? view.format : "B";
    if (same && array_format_ != format) {
      same = TypeOfFormat(format, static_cast<size_t>(view.itemsize), name_) == type_;
      if (same) array_format_ = format;
    }
    if (!same) Fail(row, "array shape or dtype differs from the first row's");
    data_.append(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
  }

  std::string name_;
  ColumnType type_ = ColumnType::kFloat32;
  ShapeKind shape_kind_ = kScalar;
  std::vector<uint64_t> inner_;
  std::string array_format_;  // buffer format of the rows seen so far (arrays)
  uint64_t rows_ = 0;
  std::string data_;
  std::vector<uint64_t> offsets_{0};
  std::string payload_;
};

// Python rows -> one columnar batch, appended in pieces: a feeding task hands
// over a few hundred rows at a time (so that few Python objects are alive at
// once) and takes a batch when it is large enough.
// rows: a list of tuples/lists/pyspark Rows (one column per element) or of
// single values (one column). Element values: int, float (-> float32), bool,
// str/bytes, a list of numbers (a vector column), or a numpy array (its
// shape and dtype). names: column names (default: Row fields, else "0", "1", ...).
class RowBatcher {
 public:
  explicit RowBatcher(std::optional<std::vector<std::string>> names) : names_(std::move(names)) {}

  void Append(nb::handle rows) {
    nb::object seq = nb::steal(PySequence_Fast(rows.ptr(), "rows must be a sequence"));
    if (!seq.is_valid()) throw nb::python_error();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) AppendRow(PySequence_Fast_GET_ITEM(seq.ptr(), i));
  }

  // Appends the rows of one pickled list of rows (a batch of PySpark's pickle
  // serializer) without unpickling them; returns how many. Returns -1, with
  // nothing appended, when the pickle holds values that only Python reads or
  // rows that differ in structure from each other or from the batch so far:
  // then append(pickle.loads(blob)), which handles them or says what is wrong.
  int64_t AppendPickled(nb::bytes blob) {
    using K = PickleValue::Kind;
    if (!pickled_.Parse(std::string_view(blob.c_str(), blob.size())).ok()) return -1;
    const size_t n = pickled_.rows();
    if (n == 0) return 0;
    const PickleValue& first = pickled_.row(0);
    const bool tuple_rows = first.kind == K::kTuple || first.kind == K::kList;
    const size_t width = tuple_rows ? pickled_.Items(first).size() : 1;
    if (width == 0 || (rows_ > 0 && (tuple_rows != tuple_rows_ ||
                                     static_cast<Py_ssize_t>(width) != width_))) {
      return -1;
    }
    if (rows_ == 0 && names_ && names_->size() != width) return -1;
    // Every row is checked before any is appended.
    signatures_.clear();
    for (size_t i = 0; i < n; ++i) {
      const PickleValue& row = pickled_.row(i);
      std::span<const PickleValue> values(&row, 1);
      if (tuple_rows) {
        if (row.kind != K::kTuple && row.kind != K::kList) return -1;
        values = pickled_.Items(row);
        if (values.size() != width) return -1;
      }
      for (size_t c = 0; c < width; ++c) {
        std::optional<ColumnBuilder::Signature> s = ColumnBuilder::SignatureOf(pickled_, values[c]);
        if (!s) return -1;
        if (i == 0) {
          if (rows_ > 0 && !builders_[c].Accepts(*s)) return -1;
          signatures_.push_back(std::move(*s));
        } else if (!(*s == signatures_[c])) {
          return -1;
        }
      }
    }
    if (rows_ == 0) StartBatch(tuple_rows, static_cast<Py_ssize_t>(width), std::nullopt);
    for (size_t i = 0; i < n; ++i) {
      const PickleValue& row = pickled_.row(i);
      std::span<const PickleValue> values =
          tuple_rows ? pickled_.Items(row) : std::span<const PickleValue>(&row, 1);
      for (size_t c = 0; c < width; ++c) builders_[c].AppendParsed(pickled_, values[c], signatures_[c]);
    }
    rows_ += static_cast<Py_ssize_t>(n);
    return static_cast<int64_t>(n);
  }

  // Appends rows from a Python iterator until the batch holds `max_bytes` or
  // the iterator ends (then returns true). Each row is released as soon as
  // it is appended, so few Python rows are alive at once.
  bool AppendFrom(nb::handle iterator, size_t max_bytes) {
    if (!PyIter_Check(iterator.ptr())) {
      throw StatusError(Status::InvalidArgument("append_from needs an iterator"));
    }
    while (true) {
      nb::object row = nb::steal(PyIter_Next(iterator.ptr()));
      if (!row.is_valid()) {
        if (PyErr_Occurred()) throw nb::python_error();
        return true;
      }
      AppendRow(row.ptr());
      if ((rows_ & 15) == 0 && nbytes() >= max_bytes) return false;
    }
  }

  // The rows appended so far as the parts of one encoded batch, pointing into
  // this batcher's buffers: valid until the next Append or Clear.
  void Encode(BatchParts* out) {
    if (rows_ == 0) throw StatusError(Status::InvalidArgument("no rows"));
    std::vector<ColumnView> views;
    for (auto& b : builders_) views.push_back(b.View());
    ThrowIfError(EncodeBatchParts(views, static_cast<uint64_t>(rows_), out));
  }
  // Starts a new batch.
  void Clear() {
    for (auto& b : builders_) b.Clear();
    rows_ = 0;
  }
  // The rows appended so far as one encoded batch; starts a new batch.
  std::string Take() {
    BatchParts parts;
    Encode(&parts);
    std::string out;
    for (std::string_view p : parts.parts) out.append(p);
    Clear();
    return out;
  }

  uint64_t rows() const { return static_cast<uint64_t>(rows_); }
  size_t nbytes() const {
    size_t n = 0;
    for (const auto& b : builders_) n += b.nbytes();
    return n;
  }

 private:
  // The first row of a batch fixes its columns (their number and names).
  void StartBatch(PyObject* first) {
    const bool tuple_rows = PyTuple_Check(first) || PyList_Check(first);
    std::optional<std::vector<std::string>> fields;
    if (tuple_rows && nb::hasattr(first, "__fields__")) {
      fields = nb::cast<std::vector<std::string>>(nb::handle(first).attr("__fields__"));
    }
    StartBatch(tuple_rows, tuple_rows ? PySequence_Fast_GET_SIZE(first) : 1, std::move(fields));
  }

  // fields: the names a row carries (pyspark Rows), if any.
  void StartBatch(bool tuple_rows, Py_ssize_t width, std::optional<std::vector<std::string>> fields) {
    tuple_rows_ = tuple_rows;
    width_ = width;
    std::vector<std::string> col_names;
    if (names_) {
      col_names = *names_;
    } else if (fields) {
      col_names = std::move(*fields);
    } else {
      for (Py_ssize_t i = 0; i < width_; ++i) col_names.push_back(std::to_string(i));
    }
    if (static_cast<Py_ssize_t>(col_names.size()) != width_) {
      throw StatusError(Status::InvalidArgument(
          std::to_string(col_names.size()) + " names for rows of " + std::to_string(width_) +
          " values"));
    }
    // Batches tend to be alike: the columns of the last one keep their
    // memory rather than growing (and copying) their payloads step by step.
    bool same = builders_.size() == col_names.size();
    for (size_t k = 0; same && k < builders_.size(); ++k) same = builders_[k].name() == col_names[k];
    if (!same) {
      builders_.clear();
      for (const auto& name : col_names) builders_.emplace_back(name);
    }
  }

  void AppendRow(PyObject* row) {
    if (rows_ == 0) StartBatch(row);
    const size_t r = static_cast<size_t>(rows_);
    if (!tuple_rows_) {
      builders_[0].Append(row, r);
    } else {
      if (!(PyTuple_Check(row) || PyList_Check(row)) || PySequence_Fast_GET_SIZE(row) != width_) {
        throw StatusError(Status::InvalidArgument("row " + std::to_string(r) + " does not have " +
                                                  std::to_string(width_) + " values like row 0"));
      }
      for (Py_ssize_t c = 0; c < width_; ++c) {
        builders_[c].Append(PySequence_Fast_GET_ITEM(row, c), r);
      }
    }
    ++rows_;
  }

  std::optional<std::vector<std::string>> names_;
  std::vector<ColumnBuilder> builders_;
  PickledRows pickled_;  // AppendPickled's reader, kept for its memory
  std::vector<ColumnBuilder::Signature> signatures_;
  bool tuple_rows_ = false;
  Py_ssize_t width_ = 0;
  Py_ssize_t rows_ = 0;
};

// A numpy dtype for a fixed-width column type.
nb::dlpack::dtype DlpackType(ColumnType t) {
  switch (t) {
    case ColumnType::kFloat32: return nb::dtype<float>();
    case ColumnType::kFloat64: return nb::dtype<double>();
    case ColumnType::kInt32: return nb::dtype<int32_t>();
    case ColumnType::kInt64: return nb::dtype<int64_t>();
    case ColumnType::kUInt8: return nb::dtype<uint8_t>();
    case ColumnType::kBool: return nb::dtype<bool>();
    case ColumnType::kBytes: break;
  }
  throw StatusError(Status::Internal("no numpy dtype for bytes"));
}

}  // namespace

Status PushRowBatch(nb::handle batcher, const std::function<Status(feed::MessageParts)>& push) {
  auto& b = nb::cast<RowBatcher&>(batcher);
  BatchParts parts;
  b.Encode(&parts);
  Status st = push(parts.parts);
  b.Clear();
  return st;
}

nb::tuple BatchToColumns(std::string batch) {
  auto* owned = new std::string(std::move(batch));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::string*>(p); });
  uint64_t rows = 0;
  std::vector<ColumnView> cols;
  ThrowIfError(DecodeBatch(*owned, &rows, &cols));
  nb::dict out;
  for (const auto& c : cols) {
    if (c.type == ColumnType::kBytes) {
      const uint64_t n = NumValues(c.dims);
      const char* offsets = c.data.data();
      const char* values = c.data.data() + (n + 1) * 8;
      nb::list items;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t a, b;
        std::memcpy(&a, offsets + i * 8, 8);
        std::memcpy(&b, offsets + (i + 1) * 8, 8);
        items.append(nb::bytes(values + a, static_cast<size_t>(b - a)));
      }
      out[c.name.c_str()] = items;
      continue;
    }
    std::vector<size_t> shape(c.dims.begin(), c.dims.end());
    // Payloads are 8-byte aligned in the batch, so every view is aligned.
    nb::ndarray<nb::numpy> array(const_cast<char*>(c.data.data()), shape.size(), shape.data(),
                                 owner, nullptr, DlpackType(c.type));
    out[c.name.c_str()] = array.cast();
  }
  return nb::make_tuple(rows, out);
}

void InitFeed(nb::module_& m) {
  nb::class_<PyRing>(m, "Ring")
      .def_static("create", [](const std::string& name, size_t capacity) {
        return new PyRing(ValueOrThrow(Ring::Create(name, capacity)));
      }, nb::arg("name"), nb::arg("capacity") = kDefaultRingCapacity)
      .def_static("attach", [](const std::string& name) {
        return new PyRing(ValueOrThrow(Ring::Attach(name)));
      }, nb::arg("name"))
      .def("push", &PyRing::Push, nb::arg("message"), nb::arg("timeout") = 600.0)
      .def("pop", &PyRing::Pop, nb::arg("timeout") = 600.0)
      .def("close_input", &PyRing::CloseInput)
      .def("close_consumer", &PyRing::CloseConsumer, nb::arg("reason"))
      .def("close", &PyRing::Close)
      .def_prop_ro("name", &PyRing::name)
      .def("stats", &PyRing::Stats);

  m.def("sweep_stale_rings", &SweepStaleRings, nb::arg("prefix"));

  // columns: dict name -> C-contiguous numpy array (first dimension = rows) or
  // list of bytes (a bytes column). Returns the encoded batch.
  m.def("encode_batch", [](nb::dict columns) {
    std::vector<ColumnView> views;
    std::vector<std::string> owned;  // bytes columns' payloads
    std::vector<Py_buffer> buffers;
    owned.reserve(columns.size());
    buffers.reserve(columns.size());
    struct Release {
      std::vector<Py_buffer>* b;
      ~Release() {
        for (auto& v : *b) PyBuffer_Release(&v);
      }
    } release{&buffers};
    uint64_t rows = 0;
    bool first = true;
    for (auto [key, value] : columns) {
      ColumnView c;
      c.name = nb::cast<std::string>(key);
      if (PyList_Check(value.ptr())) {
        std::string payload;
        const size_t n = static_cast<size_t>(PyList_GET_SIZE(value.ptr()));
        std::vector<uint64_t> offsets(n + 1, 0);
        std::string data;
        for (size_t i = 0; i < n; ++i) {
          PyObject* item = PyList_GET_ITEM(value.ptr(), i);
          if (!PyBytes_Check(item)) {
            throw StatusError(Status::InvalidArgument("column '" + c.name +
                                                      "': a list column must hold bytes"));
          }
          data.append(PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item));
          offsets[i + 1] = data.size();
        }
        payload.append(reinterpret_cast<const char*>(offsets.data()), offsets.size() * 8);
        payload += data;
        owned.push_back(std::move(payload));
        c.type = ColumnType::kBytes;
        c.dims = {n};
        c.data = owned.back();
      } else {
        Py_buffer view;
        if (PyObject_GetBuffer(value.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
          PyErr_Clear();
          throw StatusError(Status::InvalidArgument(
              "column '" + c.name + "': expected a C-contiguous numpy array or a list of bytes"));
        }
        buffers.push_back(view);
        if (view.ndim < 1) {
          throw StatusError(Status::InvalidArgument("column '" + c.name +
                                                    "' needs at least one dimension (rows)"));
        }
        c.type = TypeOfFormat(view.format ? view.format : "B", static_cast<size_t>(view.itemsize),
                              c.name);
        for (int d = 0; d < view.ndim; ++d) c.dims.push_back(static_cast<uint64_t>(view.shape[d]));
        c.data = std::string_view(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
      }
      if (first) rows = c.dims[0];
      first = false;
      views.push_back(std::move(c));
    }
    std::string out;
    ThrowIfError(EncodeBatch(views, rows, &out));
    return nb::bytes(out.data(), out.size());
  }, nb::arg("columns"));

  // rows: a list of tuples/lists/pyspark Rows (one column per element) or of
  // single values (one column). Element values: int, float (-> float32), bool,
  // str/bytes, a list of numbers (a vector column), or a numpy array (its
  // shape and dtype). names: column names (default: Row fields, else "0", "1", ...).
  nb::class_<RowBatcher>(m, "RowBatcher")
      .def(nb::init<std::optional<std::vector<std::string>>>(), nb::arg("names") = nb::none())
      .def("append", &RowBatcher::Append, nb::arg("rows"))
      // Appends rows from an iterator until about max_bytes are held; True
      // once the iterator is exhausted.
      .def("append_from", &RowBatcher::AppendFrom, nb::arg("iterator"), nb::arg("max_bytes"))
      // Appends a pickled list of rows without unpickling it; the row count,
      // or -1 (nothing appended) if it needs Python: append(pickle.loads(blob)).
      .def("append_pickled", &RowBatcher::AppendPickled, nb::arg("blob"))
      .def("take", [](RowBatcher& b) {
        std::string out = b.Take();
        return nb::bytes(out.data(), out.size());
      })
      .def_prop_ro("rows", &RowBatcher::rows)
      .def_prop_ro("nbytes", &RowBatcher::nbytes);

  m.def("rows_to_batch", [](nb::handle rows, std::optional<std::vector<std::string>> names) {
    RowBatcher b(std::move(names));
    b.Append(rows);
    std::string out = b.Take();
    return nb::bytes(out.data(), out.size());
  }, nb::arg("rows"), nb::arg("names") = nb::none());

  // Returns (rows, dict name -> numpy array or list of bytes); the arrays
  // share one copy of the batch.
  m.def("decode_batch", [](nb::bytes data) {
    return BatchToColumns(std::string(data.c_str(), data.size()));
  }, nb::arg("data"));
}

}  // namespace sparktf::python
