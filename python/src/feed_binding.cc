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
#include "sparktf/feed/row_batcher.h"

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

// The bindings' side of a RowBatcher: Python rows read into its columns.
// Element values: int, float (-> float32), bool, str/bytes, a list or tuple
// of numbers (a sequence column), a numpy array (its shape and dtype) or a
// numpy scalar (as its Python value).
class PyRowBatcher {
 public:
  explicit PyRowBatcher(std::optional<std::vector<std::string>> names) : core_(std::move(names)) {}

  void Append(nb::handle rows) {
    nb::object seq = nb::steal(PySequence_Fast(rows.ptr(), "rows must be a sequence"));
    if (!seq.is_valid()) throw nb::python_error();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) AppendRow(PySequence_Fast_GET_ITEM(seq.ptr(), i));
  }

  int64_t AppendPickled(nb::bytes blob) {
    return core_.AppendPickled(std::string_view(blob.c_str(), blob.size()));
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
      if ((core_.rows() & 15) == 0 && core_.nbytes() >= max_bytes) return false;
    }
  }

  RowBatcher& core() { return core_; }

  std::string Take() { return ValueOrThrow(core_.Take()); }

 private:
  void AppendRow(PyObject* row) {
    if (core_.rows() == 0) StartBatch(row);
    if (!core_.tuple_rows()) {
      AppendValue(0, row);
    } else {
      const size_t width = core_.width();
      if (!(PyTuple_Check(row) || PyList_Check(row)) ||
          static_cast<size_t>(PySequence_Fast_GET_SIZE(row)) != width) {
        throw StatusError(Status::InvalidArgument("row " + std::to_string(core_.rows()) +
                                                  " does not have " + std::to_string(width) +
                                                  " values like row 0"));
      }
      for (size_t c = 0; c < width; ++c) {
        AppendValue(c, PySequence_Fast_GET_ITEM(row, static_cast<Py_ssize_t>(c)));
      }
    }
    core_.EndRow();
  }

  // The first row of a batch fixes its columns (their number and names).
  void StartBatch(PyObject* first) {
    const bool tuple_rows = PyTuple_Check(first) || PyList_Check(first);
    std::optional<std::vector<std::string>> fields;
    if (tuple_rows && nb::hasattr(first, "__fields__")) {
      fields = nb::cast<std::vector<std::string>>(nb::handle(first).attr("__fields__"));
    }
    const size_t width = tuple_rows ? static_cast<size_t>(PySequence_Fast_GET_SIZE(first)) : 1;
    ThrowIfError(core_.StartBatch(tuple_rows, width, std::move(fields)));
    array_formats_.assign(width, std::string());
  }

  void AppendValue(size_t c, PyObject* v) {
    ColumnBuilder& col = core_.column(c);
    if (col.rows() == 0) StartColumn(col, v);
    switch (col.signature().shape) {
      case ColumnShape::kScalar: AppendScalar(col, v); break;
      case ColumnShape::kSequence: AppendSequence(col, v); break;
      case ColumnShape::kArray: AppendArray(col, v, array_formats_[c], shape_); break;
    }
    col.EndRow();
  }

  [[noreturn]] static void Fail(const ColumnBuilder& col, const std::string& what) {
    throw StatusError(col.Error(what));
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
    return ColumnType::kBytes;  // text, or checked when appended
  }

  // Types `col` by its first value.
  static void StartColumn(ColumnBuilder& col, PyObject* v) {
    ColumnSignature s;
    if (PyList_Check(v) || PyTuple_Check(v)) {
      s.shape = ColumnShape::kSequence;
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
      s.inner = {static_cast<uint64_t>(n)};
      if (n > 0) {
        PyObject* first = PySequence_Fast_GET_ITEM(v, 0);
        s.type = PyFloat_Check(first) ? ColumnType::kFloat32
                 : PyBool_Check(first) ? ColumnType::kBool
                 : PyLong_Check(first) ? ColumnType::kInt64
                                       : ColumnType::kBytes;
        if (s.type == ColumnType::kBytes) Fail(col, "lists must hold numbers");
      }
    } else if (!IsText(v) && PyObject_CheckBuffer(v) && !IsZeroDim(v)) {
      s.shape = ColumnShape::kArray;
      Py_buffer view;
      if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        Fail(col, "arrays must be C-contiguous");
      }
      struct Release {
        Py_buffer* b;
        ~Release() { PyBuffer_Release(b); }
      } release{&view};
      s.type = TypeOfFormat(view.format ? view.format : "B", static_cast<size_t>(view.itemsize),
                            col.name());
      for (int d = 0; d < view.ndim; ++d) s.inner.push_back(static_cast<uint64_t>(view.shape[d]));
    } else if (nb::hasattr(v, "item") && nb::hasattr(v, "dtype")) {
      nb::object item = nb::handle(v).attr("item")();  // a numpy scalar: its Python value's type
      s.type = ScalarType(item.ptr());
    } else {
      s.type = ScalarType(v);
      if (!IsText(v) && !PyLong_Check(v) && !PyFloat_Check(v)) {
        Fail(col, std::string("unsupported value of type ") + Py_TYPE(v)->tp_name);
      }
    }
    col.Start(std::move(s));
  }

  static void PutNumber(ColumnBuilder& col, PyObject* v) {
    switch (col.signature().type) {
      case ColumnType::kFloat32: {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          Fail(col, "expected a number");
        }
        col.PutFloat32(static_cast<float>(d));
        return;
      }
      case ColumnType::kInt64:
      case ColumnType::kBool: {
        if (!PyLong_Check(v)) Fail(col, "expected an int");
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) Fail(col, "int does not fit int64");
        if (col.signature().type == ColumnType::kBool) {
          col.PutBool(x != 0);
        } else {
          col.PutInt64(x);
        }
        return;
      }
      default: Fail(col, "unexpected value");
    }
  }

  static void AppendScalar(ColumnBuilder& col, PyObject* v) {
    nb::object item;
    if (!PyLong_Check(v) && !PyFloat_Check(v) && !IsText(v) && nb::hasattr(v, "item")) {
      item = nb::handle(v).attr("item")();
      v = item.ptr();
    }
    if (col.signature().type != ColumnType::kBytes) return PutNumber(col, v);
    if (PyBytes_Check(v)) {
      col.PutText(std::string_view(PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v)));
    } else if (PyUnicode_Check(v)) {
      Py_ssize_t n;
      const char* s = PyUnicode_AsUTF8AndSize(v, &n);
      if (!s) throw nb::python_error();
      col.PutText(std::string_view(s, static_cast<size_t>(n)), true);
    } else {
      Fail(col, "expected bytes or str");
    }
  }

  static void AppendSequence(ColumnBuilder& col, PyObject* v) {
    if (!PyList_Check(v) && !PyTuple_Check(v)) Fail(col, "expected a list like the first row's");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    ThrowIfError(col.CheckSequence(static_cast<uint64_t>(n)));
    PyObject** items = PySequence_Fast_ITEMS(v);
    Py_ssize_t i = 0;
    if (col.signature().type == ColumnType::kFloat32) {  // the common case, without a call per value
      char* out = col.Extend(static_cast<size_t>(n));
      for (; i < n && PyFloat_CheckExact(items[i]); ++i) {
        const float f = static_cast<float>(PyFloat_AS_DOUBLE(items[i]));
        std::memcpy(out + i * 4, &f, 4);
      }
      if (i == n) return;
      col.Unextend(static_cast<size_t>(n - i));  // ints or numpy scalars: the slow path
    }
    for (; i < n; ++i) PutNumber(col, items[i]);
  }

  // format: the buffer format of the column's rows so far (checked once);
  // shape: scratch for the row's shape, kept for its memory.
  static void AppendArray(ColumnBuilder& col, PyObject* v, std::string& format,
                          std::vector<uint64_t>& shape) {
    Py_buffer view;
    if (IsText(v) || PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      Fail(col, "expected a C-contiguous array like the first row's");
    }
    struct Release {
      Py_buffer* b;
      ~Release() { PyBuffer_Release(b); }
    } release{&view};
    const char* f = view.format ? view.format : "B";
    ColumnType type = col.signature().type;
    if (format != f) {
      type = TypeOfFormat(f, static_cast<size_t>(view.itemsize), col.name());
      if (type == col.signature().type) format = f;
    }
    shape.assign(view.shape, view.shape + view.ndim);
    ThrowIfError(col.PutArray(type, shape,
                              std::string_view(static_cast<const char*>(view.buf),
                                               static_cast<size_t>(view.len))));
  }

  RowBatcher core_;
  std::vector<std::string> array_formats_;  // per column
  std::vector<uint64_t> shape_;             // AppendArray's scratch
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

ArrowBatchView::ArrowBatchView(nb::handle batch) {
  if (!nb::hasattr(batch, "__arrow_c_array__")) {
    throw StatusError(Status::InvalidArgument("expected an Arrow record batch (pyarrow.RecordBatch)"));
  }
  capsules_ = batch.attr("__arrow_c_array__")();
  auto* schema = static_cast<ArrowSchema*>(
      PyCapsule_GetPointer(nb::object(capsules_[0]).ptr(), "arrow_schema"));
  auto* array = static_cast<ArrowArray*>(
      PyCapsule_GetPointer(nb::object(capsules_[1]).ptr(), "arrow_array"));
  if (schema == nullptr || array == nullptr) throw nb::python_error();
  schema_ = schema;
  array_ = array;
}

Status PushRowBatch(nb::handle batcher, const std::function<Status(feed::MessageParts)>& push) {
  RowBatcher& b = nb::cast<PyRowBatcher&>(batcher).core();
  BatchParts parts;
  ThrowIfError(b.Encode(&parts));
  Status st = push(parts.parts);
  b.Clear();
  return st;
}

nb::tuple SliceToColumns(BatchSlice slice, bool with_row_arrays) {
  auto* owner_ref = new std::shared_ptr<const void>(slice.owner);
  nb::capsule owner(owner_ref, [](void* p) noexcept {
    delete static_cast<std::shared_ptr<const void>*>(p);
  });
  nb::dict out;
  nb::list row_arrays;
  for (size_t k = 0; k < slice.columns.size(); ++k) {
    const ColumnView& c = slice.columns[k];
    if (c.row_arrays) row_arrays.append(nb::str(c.name.c_str()));
    const uint64_t inner = c.dims[0] ? NumValues(c.dims) / c.dims[0] : 0;
    if (c.type == ColumnType::kBytes) {
      const uint64_t n = NumValues(c.dims);
      const char* offsets = c.data.data();
      const char* values = c.data.data() + (n + 1) * 8;
      nb::list items;
      for (uint64_t i = slice.first_row * inner; i < (slice.first_row + slice.rows) * inner; ++i) {
        uint64_t a, b;
        std::memcpy(&a, offsets + i * 8, 8);
        std::memcpy(&b, offsets + (i + 1) * 8, 8);
        if (c.text) {  // str rows, as the feeding task's values were
          items.append(nb::str(values + a, static_cast<size_t>(b - a)));
        } else {
          items.append(nb::bytes(values + a, static_cast<size_t>(b - a)));
        }
      }
      out[c.name.c_str()] = items;
      continue;
    }
    std::vector<size_t> shape(c.dims.begin(), c.dims.end());
    shape[0] = slice.rows;
    // A view of the slice's rows: aligned to the item size (payloads are 8-byte
    // aligned in a batch, rows whole items).
    nb::ndarray<nb::numpy> array(const_cast<char*>(SliceValues(slice, k).data()), shape.size(),
                                 shape.data(), owner, nullptr, DlpackType(c.type));
    out[c.name.c_str()] = array.cast();
  }
  if (with_row_arrays) return nb::make_tuple(slice.rows, out, row_arrays);
  return nb::make_tuple(slice.rows, out);
}

nb::tuple BatchToColumns(std::string batch, bool with_row_arrays) {
  BatchSlice slice;
  auto owned = std::make_shared<const std::string>(std::move(batch));
  ThrowIfError(DecodeBatch(*owned, &slice.rows, &slice.columns));
  slice.owner = std::move(owned);
  return SliceToColumns(std::move(slice), with_row_arrays);
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
  nb::class_<PyRowBatcher>(m, "RowBatcher")
      .def(nb::init<std::optional<std::vector<std::string>>>(), nb::arg("names") = nb::none())
      .def("append", &PyRowBatcher::Append, nb::arg("rows"))
      // Appends rows from an iterator until about max_bytes are held; True
      // once the iterator is exhausted.
      .def("append_from", &PyRowBatcher::AppendFrom, nb::arg("iterator"), nb::arg("max_bytes"))
      // Appends a pickled list of rows without unpickling it; the row count,
      // or -1 (nothing appended) if it needs Python: append(pickle.loads(blob)).
      .def("append_pickled", &PyRowBatcher::AppendPickled, nb::arg("blob"))
      .def("take", [](PyRowBatcher& b) {
        std::string out = b.Take();
        return nb::bytes(out.data(), out.size());
      })
      .def_prop_ro("rows", [](PyRowBatcher& b) { return b.core().rows(); })
      .def_prop_ro("nbytes", [](PyRowBatcher& b) { return b.core().nbytes(); });

  // An Arrow record batch (pyarrow.RecordBatch) of at least one row as
  // {name: numpy array, or list of str/bytes}, converted as a DataFrame's
  // feeding task converts it (arrow_feed.h); the arrays view one copy.
  m.def("arrow_columns", [](nb::handle batch) {
    ArrowBatchView view(batch);
    ArrowFeeder feeder;
    std::string out;
    ThrowIfError(feeder.Encode(view.schema(), view.array(), 0, view.array().length, &out));
    nb::tuple rows_and_columns = BatchToColumns(std::move(out));
    return nb::object(rows_and_columns[1]);
  }, nb::arg("batch"));

  m.def("rows_to_batch", [](nb::handle rows, std::optional<std::vector<std::string>> names) {
    PyRowBatcher b(std::move(names));
    b.Append(rows);
    std::string out = b.Take();
    return nb::bytes(out.data(), out.size());
  }, nb::arg("rows"), nb::arg("names") = nb::none());

  // Returns (rows, dict name -> numpy array or list of bytes), the arrays
  // sharing one copy of the batch; with row_arrays, also the names of the
  // columns whose rows held numpy arrays (not lists).
  m.def("decode_batch", [](nb::bytes data, bool row_arrays) {
    return BatchToColumns(std::string(data.c_str(), data.size()), row_arrays);
  }, nb::arg("data"), nb::arg("row_arrays") = false);
}

}  // namespace sparktf::python
