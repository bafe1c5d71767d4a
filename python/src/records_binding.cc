// sparktf._native records API: TFRecord reader/writer, Example codec, columnar
// decode and schema inference. Conversions between Python values and Features
// happen here, in C++, so that no per-value Python loop runs.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "bindings.h"
#include "sparktf/fs/file_system.h"
#include "sparktf/fs/output_committer.h"
#include "sparktf/record/columnar.h"
#include "sparktf/record/columnar_encoder.h"
#include "sparktf/record/example.h"
#include "sparktf/record/record_reader.h"
#include "sparktf/record/record_writer.h"

namespace sparktf::python {
namespace {

Status BadValue(const std::string& feature, const std::string& what) {
  return Status::InvalidArgument("feature '" + feature + "': " + what);
}

// ---- Python values -> Feature ----------------------------------------------

// Appends one Python scalar to f, fixing f's kind from the first value.
// Ints mixed with floats make a float list, as numpy would.
void AppendScalar(nb::handle v, const std::string& name, Feature* f) {
  PyObject* o = v.ptr();
  if (PyBytes_Check(o) || PyByteArray_Check(o) || PyUnicode_Check(o)) {
    if (f->kind != FeatureKind::kNone && f->kind != FeatureKind::kBytes) {
      throw StatusError(BadValue(name, "mixes bytes/str with numbers"));
    }
    f->kind = FeatureKind::kBytes;
    if (PyBytes_Check(o)) {
      f->bytes_list.emplace_back(PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o));
    } else if (PyByteArray_Check(o)) {
      f->bytes_list.emplace_back(PyByteArray_AS_STRING(o), PyByteArray_GET_SIZE(o));
    } else {
      Py_ssize_t n;
      const char* s = PyUnicode_AsUTF8AndSize(o, &n);
      if (s == nullptr) throw nb::python_error();
      f->bytes_list.emplace_back(s, n);
    }
    return;
  }
  if (PyFloat_Check(o)) {
    if (f->kind == FeatureKind::kBytes) {
      throw StatusError(BadValue(name, "mixes numbers with bytes/str"));
    }
    if (f->kind == FeatureKind::kInt64) {  // promote what came before
      for (int64_t x : f->int64_list) f->float_list.push_back(static_cast<float>(x));
      f->int64_list.clear();
    }
    f->kind = FeatureKind::kFloat;
    f->float_list.push_back(static_cast<float>(PyFloat_AS_DOUBLE(o)));
    return;
  }
  if (PyLong_Check(o)) {
    if (f->kind == FeatureKind::kBytes) {
      throw StatusError(BadValue(name, "mixes numbers with bytes/str"));
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) {
      throw StatusError(
          BadValue(name, nb::repr(v).c_str() + std::string(" does not fit int64")));
    }
    if (f->kind == FeatureKind::kFloat) {
      f->float_list.push_back(static_cast<float>(x));
    } else {
      f->kind = FeatureKind::kInt64;
      f->int64_list.push_back(x);
    }
    return;
  }
  if (nb::hasattr(v, "item") && nb::hasattr(v, "dtype")) {  // a numpy scalar
    AppendScalar(v.attr("item")(), name, f);
    return;
  }
  throw StatusError(BadValue(name, std::string("unsupported value of type ") +
                                       Py_TYPE(o)->tp_name +
                                       " (expected int, float, bytes, str, a list of "
                                       "them, or a numpy array)"));
}

// Fills f from an object exposing a C-contiguous numeric buffer (numpy array,
// array.array). Returns false when the buffer is not of a numeric format.
bool FromNumericBuffer(nb::handle v, const std::string& name, Feature* f) {
  Py_buffer view;
  if (PyObject_GetBuffer(v.ptr(), &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    return false;
  }
  struct Release {
    Py_buffer* b;
    ~Release() { PyBuffer_Release(b); }
  } release{&view};
  std::string_view fmt = view.format ? view.format : "B";
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@'))
    fmt.remove_prefix(1);
  if (fmt.size() != 1) return false;
  const size_t n = static_cast<size_t>(view.len / std::max<Py_ssize_t>(view.itemsize, 1));
  auto ints = [&](auto tag) {
    using T = decltype(tag);
    if (view.itemsize != sizeof(T)) return false;
    f->kind = FeatureKind::kInt64;
    f->int64_list.resize(n);
    const T* p = static_cast<const T*>(view.buf);
    for (size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (p[i] > static_cast<uint64_t>(INT64_MAX)) {
          throw StatusError(BadValue(name, std::to_string(p[i]) + " does not fit int64"));
        }
      }
      f->int64_list[i] = static_cast<int64_t>(p[i]);
    }
    return true;
  };
  switch (fmt[0]) {
    case 'f':
      f->kind = FeatureKind::kFloat;
      f->float_list.resize(n);
      if (n) std::memcpy(f->float_list.data(), view.buf, n * 4);
      return true;
    case 'd': {
      f->kind = FeatureKind::kFloat;
      f->float_list.resize(n);
      const double* p = static_cast<const double*>(view.buf);
      for (size_t i = 0; i < n; ++i) f->float_list[i] = static_cast<float>(p[i]);
      return true;
    }
    case '?': return ints(uint8_t{});
    case 'b': return ints(int8_t{});
    case 'B': return ints(uint8_t{});
    case 'h': return ints(int16_t{});
    case 'H': return ints(uint16_t{});
    case 'i': return ints(int32_t{});
    case 'I': return ints(uint32_t{});
    case 'l':
    case 'q': return ints(int64_t{});
    case 'L':
    case 'Q': return ints(uint64_t{});
    default: return false;
  }
}

std::optional<FeatureKind> KindFromName(const std::string& s) {
  if (s == "int64") return FeatureKind::kInt64;
  if (s == "float" || s == "float32") return FeatureKind::kFloat;
  if (s == "bytes") return FeatureKind::kBytes;
  return std::nullopt;
}

// Accepts a scalar, a list/tuple, a numpy array, or (kind, values) with kind
// "int64" | "float" | "bytes" to give empty lists a type.
Feature ToFeature(nb::handle value, const std::string& name) {
  Feature f;
  std::optional<FeatureKind> forced;
  if (PyTuple_Check(value.ptr()) && PyTuple_GET_SIZE(value.ptr()) == 2 &&
      PyUnicode_Check(PyTuple_GET_ITEM(value.ptr(), 0))) {
    std::string kind =
        nb::cast<std::string>(nb::handle(PyTuple_GET_ITEM(value.ptr(), 0)));
    forced = KindFromName(kind);
    if (!forced) {
      throw StatusError(
          BadValue(name, "unknown kind '" + kind + "' (expected int64, float or bytes)"));
    }
    value = PyTuple_GET_ITEM(value.ptr(), 1);
  }
  PyObject* o = value.ptr();
  const bool is_text = PyBytes_Check(o) || PyByteArray_Check(o) || PyUnicode_Check(o);
  if (!is_text && PyObject_CheckBuffer(o) && FromNumericBuffer(value, name, &f)) {
    // done
  } else if (PyList_Check(o) || PyTuple_Check(o)) {
    for (nb::handle item : nb::borrow<nb::sequence>(value)) AppendScalar(item, name, &f);
  } else if (!is_text && nb::hasattr(value, "tolist") && nb::hasattr(value, "ndim")) {
    nb::object list = value.attr("tolist")();  // numpy arrays of bytes/objects
    if (PyList_Check(list.ptr())) {
      for (nb::handle item : nb::borrow<nb::list>(list)) AppendScalar(item, name, &f);
    } else {
      AppendScalar(list, name, &f);
    }
  } else {
    AppendScalar(value, name, &f);
  }
  if (forced) {
    if (f.kind == FeatureKind::kInt64 && *forced == FeatureKind::kFloat) {
      for (int64_t x : f.int64_list) f.float_list.push_back(static_cast<float>(x));
      f.int64_list.clear();
    } else if (f.kind != FeatureKind::kNone && f.kind != *forced) {
      throw StatusError(
          BadValue(name, "values are " + std::string(FeatureKindName(f.kind)) + ", not " +
                             std::string(FeatureKindName(*forced))));
    }
    f.kind = *forced;
  } else if (f.kind == FeatureKind::kNone) {
    throw StatusError(BadValue(name,
                               "an empty list has no type; pass (kind, []) with kind "
                               "'int64', 'float' or 'bytes'"));
  }
  return f;
}

FeatureMap ToFeatureMap(nb::handle mapping) {
  if (!PyDict_Check(mapping.ptr()) && !nb::hasattr(mapping, "items")) {
    throw StatusError(
        Status::InvalidArgument("features must be a dict of name -> values"));
  }
  FeatureMap out;
  for (nb::handle item : mapping.attr("items")()) {
    nb::handle key = item[0];
    nb::handle value = item[1];
    if (!PyUnicode_Check(key.ptr())) {
      throw StatusError(Status::InvalidArgument(
          "feature names must be str, got " + std::string(Py_TYPE(key.ptr())->tp_name)));
    }
    std::string name = nb::cast<std::string>(key);
    if (value.is_none()) continue;  // None means absent
    out[name] = ToFeature(value, name);
  }
  return out;
}

// ---- Feature -> Python values ----------------------------------------------

template <typename T>
nb::object ToNumpy(std::vector<T>&& v, std::vector<size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap,
                    [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(
      nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner),
      nb::rv_policy::reference);
}

template <typename T>
nb::object ToNumpy1D(std::vector<T>&& v) {
  const size_t n = v.size();
  return ToNumpy(std::move(v), {n});
}

nb::object FromFeature(Feature&& f) {
  switch (f.kind) {
    case FeatureKind::kInt64: return ToNumpy1D(std::move(f.int64_list));
    case FeatureKind::kFloat: return ToNumpy1D(std::move(f.float_list));
    case FeatureKind::kBytes: {
      nb::list out;
      for (const auto& s : f.bytes_list) out.append(nb::bytes(s.data(), s.size()));
      return out;
    }
    case FeatureKind::kNone: break;
  }
  return nb::none();
}

nb::dict FromFeatureMap(FeatureMap&& m) {
  nb::dict out;
  for (auto& [k, f] : m) out[nb::str(k.data(), k.size())] = FromFeature(std::move(f));
  return out;
}

std::string_view BytesView(nb::handle b) {
  PyObject* o = b.ptr();
  if (PyBytes_Check(o))
    return {PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))};
  if (PyByteArray_Check(o)) {
    return {PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o))};
  }
  throw StatusError(
      Status::InvalidArgument(std::string("expected bytes, got ") + Py_TYPE(o)->tp_name));
}

// ---- schema and columns ----------------------------------------------------

// Python schema rows: (name, dtype, var_len, shape, default_or_None).
std::vector<ColumnSpec> ToSchema(nb::handle rows) {
  std::vector<ColumnSpec> schema;
  for (nb::handle row : rows) {
    ColumnSpec s;
    s.name = nb::cast<std::string>(row[0]);
    s.dtype = ValueOrThrow(ParseDType(nb::cast<std::string>(row[1])));
    s.var_len = nb::cast<bool>(row[2]);
    s.shape = nb::cast<std::vector<int64_t>>(row[3]);
    nb::handle def = row[4];
    if (!def.is_none()) {
      s.has_default = true;
      Feature f = ToFeature(nb::make_tuple(s.dtype == DType::kFloat32 ? "float"
                                           : s.dtype == DType::kInt64 ? "int64"
                                                                      : "bytes",
                                           def),
                            s.name);
      s.default_floats = std::move(f.float_list);
      s.default_ints = std::move(f.int64_list);
      s.default_bytes = std::move(f.bytes_list);
    }
    schema.push_back(std::move(s));
  }
  return schema;
}

nb::object BytesColumn(ColumnData& c) {
  nb::list out;
  for (size_t i = 0; i + 1 < c.bytes_offsets.size(); ++i) {
    out.append(
        nb::bytes(c.bytes_data.data() + c.bytes_offsets[i],
                  static_cast<size_t>(c.bytes_offsets[i + 1] - c.bytes_offsets[i])));
  }
  return out;
}

// One dict per column: values (ndarray, or list of bytes), and for var_len
// columns row_splits and present.
nb::list ColumnsToPython(std::vector<ColumnData>&& cols,
                         const std::vector<ColumnSpec>& schema, size_t rows) {
  nb::list out;
  for (size_t i = 0; i < cols.size(); ++i) {
    ColumnData& c = cols[i];
    nb::dict d;
    d["name"] = schema[i].name;
    d["dtype"] = std::string(DTypeName(c.dtype));
    d["var_len"] = schema[i].var_len;
    std::vector<size_t> shape;
    if (schema[i].var_len) {
      shape = {c.num_values()};
    } else {
      shape.push_back(rows);
      for (int64_t dim : schema[i].shape) shape.push_back(static_cast<size_t>(dim));
    }
    d["shape"] = nb::cast(shape);
    switch (c.dtype) {
      case DType::kFloat32: d["values"] = ToNumpy(std::move(c.floats), shape); break;
      case DType::kInt64: d["values"] = ToNumpy(std::move(c.ints), shape); break;
      case DType::kBytes: d["values"] = BytesColumn(c); break;
    }
    if (schema[i].var_len) {
      d["row_splits"] = ToNumpy1D(std::move(c.row_splits));
      d["present"] = ToNumpy1D(std::move(c.present));
    }
    out.append(d);
  }
  return out;
}

Compression CompressionFor(const std::string& path, const std::optional<std::string>& c) {
  return c ? ValueOrThrow(ParseCompression(*c)) : CompressionFromPath(path);
}

// Reads every record of `paths` through fn(record) with the GIL released.
template <typename Fn>
void ForEachRecord(const std::vector<std::string>& paths,
                   const std::optional<std::string>& compression, size_t max_records,
                   Fn&& fn) {
  size_t seen = 0;
  for (const auto& path : paths) {
    RecordReaderOptions options;
    options.compression = CompressionFor(path, compression);
    auto reader = ValueOrThrow(RecordReader::Open(path, options));
    std::string_view rec;
    while (seen < max_records) {
      Status st = reader->ReadRecord(&rec);
      if (st.IsOutOfRange()) break;
      ThrowIfError(st);
      ThrowIfError(fn(rec).WithContext(path));
      ++seen;
    }
    if (seen >= max_records) return;
  }
}

// A read-only view of a Python buffer (numpy array, bytes, Arrow buffer) whose
// items must have `itemsize` bytes. Empty when the object is None.
class BufferView {
 public:
  BufferView(nb::handle obj, size_t itemsize, const char* what) {
    if (obj.is_none()) return;
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      throw StatusError(
          Status::InvalidArgument(std::string(what) + ": expected a contiguous buffer"));
    }
    held_ = true;
    if (itemsize != 1 && static_cast<size_t>(view_.len) % itemsize != 0) {
      throw StatusError(Status::InvalidArgument(
          std::string(what) + ": buffer size " + std::to_string(view_.len) +
          " is not a multiple of " + std::to_string(itemsize)));
    }
    count_ = static_cast<size_t>(view_.len) / itemsize;
  }
  ~BufferView() {
    if (held_) PyBuffer_Release(&view_);
  }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  template <typename T>
  const T* as() const {
    return held_ ? static_cast<const T*>(view_.buf) : nullptr;
  }
  size_t count() const { return count_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
  size_t count_ = 0;
};

// ---- classes -----------------------------------------------------------------

class PyRecordWriter {
 public:
  PyRecordWriter(const std::string& path, const std::optional<std::string>& compression,
                 int level) {
    RecordWriterOptions o;
    o.compression = CompressionFor(path, compression);
    o.compression_level = level;
    Result<std::unique_ptr<RecordWriter>> w = [&] {
      nb::gil_scoped_release release;
      return RecordWriter::Open(path, o);
    }();
    writer_ = ValueOrThrow(std::move(w));
  }
  // The file of one task attempt of an OutputCommitter job (see output_committer.h).
  static PyRecordWriter ForTaskAttempt(const std::string& output_dir,
                                       const std::string& job_id, int64_t partition,
                                       int64_t attempt, const std::string& name,
                                       const std::optional<std::string>& compression,
                                       int level) {
    RecordWriterOptions o;
    o.compression = CompressionFor(name, compression);
    o.compression_level = level;
    Result<std::unique_ptr<RecordWriter>> w = [&]() -> Result<std::unique_ptr<RecordWriter>> {
      nb::gil_scoped_release release;
      ASSIGN_OR_RETURN(auto file, OutputCommitter::OpenTaskAttemptFile(output_dir, job_id,
                                                                       partition, attempt, name));
      return RecordWriter::Make(std::move(file), o);
    }();
    return PyRecordWriter(ValueOrThrow(std::move(w)));
  }
  void Write(nb::handle record) { ThrowIfError(Live()->Write(BytesView(record))); }
  void WriteMany(nb::handle records) {
    for (nb::handle r : records) ThrowIfError(Live()->Write(BytesView(r)));
  }
  // columns: (name, kind, values, bytes_data, bytes_offsets, row_offsets, valid)
  // tuples of buffers (see InputColumn); encodes num_rows Examples and writes
  // them. Returns the number written.
  size_t WriteColumns(nb::handle columns, size_t num_rows) {
    std::vector<std::unique_ptr<BufferView>> views;
    std::vector<InputColumn> cols;
    for (nb::handle t : columns) {
      InputColumn c;
      c.name = nb::cast<std::string>(t[0]);
      std::string kind = nb::cast<std::string>(t[1]);
      auto k = KindFromName(kind);
      if (!k)
        throw StatusError(
            Status::InvalidArgument("column '" + c.name + "': unknown kind " + kind));
      c.kind = *k;
      const std::string what = "column '" + c.name + "'";
      auto view = [&](nb::handle obj, size_t itemsize) -> const BufferView& {
        views.push_back(std::make_unique<BufferView>(obj, itemsize, what.c_str()));
        return *views.back();
      };
      if (c.kind == FeatureKind::kBytes) {
        c.bytes_data = view(t[3], 1).as<char>();
        const BufferView& offs = view(t[4], 8);
        c.bytes_offsets = offs.as<int64_t>();
        c.num_values = offs.count() ? offs.count() - 1 : 0;
        if (!c.bytes_data && c.num_values) c.bytes_data = "";
      } else {
        const BufferView& vals = view(t[2], c.kind == FeatureKind::kFloat ? 4 : 8);
        c.floats = vals.as<float>();
        c.ints = vals.as<int64_t>();
        c.num_values = vals.count();
      }
      const BufferView& rows = view(t[5], 8);
      c.row_offsets = rows.as<int64_t>();
      if (c.row_offsets && rows.count() != num_rows + 1) {
        throw StatusError(Status::InvalidArgument(what +
                                                  ": row offsets need num_rows + 1 "
                                                  "entries"));
      }
      const BufferView& valid = view(t[6], 1);
      c.valid = valid.as<uint8_t>();
      if (c.valid && valid.count() < num_rows) {
        throw StatusError(Status::InvalidArgument(what + ": validity shorter than rows"));
      }
      cols.push_back(std::move(c));
    }
    RecordWriter* w = Live();
    Status st;
    {
      nb::gil_scoped_release release;
      st = EncodeColumns(cols, num_rows,
                         [w](std::string_view rec) { return w->Write(rec); });
    }
    ThrowIfError(st);
    return num_rows;
  }
  void Flush() { ThrowIfError(Live()->Flush()); }
  void Close() {
    if (!writer_) return;
    Status st;
    {
      nb::gil_scoped_release release;
      st = writer_->Close();
    }
    ThrowIfError(st);
  }
  // Discards the file: nothing is left at its path.
  void Abort() {
    nb::gil_scoped_release release;
    writer_.reset();
  }
  uint64_t records_written() const { return writer_ ? writer_->records_written() : 0; }

 private:
  explicit PyRecordWriter(std::unique_ptr<RecordWriter> writer) : writer_(std::move(writer)) {}
  RecordWriter* Live() {
    if (!writer_) throw StatusError(Status::InvalidArgument("writer is closed"));
    return writer_.get();
  }
  std::unique_ptr<RecordWriter> writer_;
};

class PyRecordReader {
 public:
  PyRecordReader(const std::string& path, const std::optional<std::string>& compression,
                 bool skip_corrupt, uint64_t start_offset,
                 std::optional<uint64_t> end_offset, bool verify) {
    RecordReaderOptions o;
    o.compression = CompressionFor(path, compression);
    o.skip_corrupt = skip_corrupt;
    o.start_offset = start_offset;
    if (end_offset) o.end_offset = *end_offset;
    o.verify_data_crc = verify;
    Result<std::unique_ptr<RecordReader>> r = [&] {
      nb::gil_scoped_release release;
      return RecordReader::Open(path, o);
    }();
    reader_ = ValueOrThrow(std::move(r));
  }
  nb::object Read() {
    std::string_view rec;
    Status st = reader_->ReadRecord(&rec);
    if (st.IsOutOfRange()) return nb::none();
    ThrowIfError(st);
    return nb::bytes(rec.data(), rec.size());
  }
  nb::list ReadBatch(size_t n) {
    nb::list out;
    std::string_view rec;
    for (size_t i = 0; i < n; ++i) {
      Status st = reader_->ReadRecord(&rec);
      if (st.IsOutOfRange()) break;
      ThrowIfError(st);
      out.append(nb::bytes(rec.data(), rec.size()));
    }
    return out;
  }
  uint64_t offset() const { return reader_->offset(); }
  nb::dict stats() const {
    nb::dict d;
    d["records"] = reader_->stats().records;
    d["skipped_bytes"] = reader_->stats().skipped_bytes;
    d["corrupt_regions"] = reader_->stats().corrupt_regions;
    return d;
  }

 private:
  std::unique_ptr<RecordReader> reader_;
};

}  // namespace

void InitRecords(nb::module_& m) {
  nb::class_<PyRecordWriter>(m, "RecordWriter")
      .def(nb::init<const std::string&, const std::optional<std::string>&, int>(),
           nb::arg("path"), nb::arg("compression") = nb::none(), nb::arg("level") = -1)
      .def_static("for_task_attempt", &PyRecordWriter::ForTaskAttempt, nb::arg("output_dir"),
                  nb::arg("job_id"), nb::arg("partition"), nb::arg("attempt"), nb::arg("name"),
                  nb::arg("compression") = nb::none(), nb::arg("level") = -1)
      .def("write", &PyRecordWriter::Write)
      .def("write_many", &PyRecordWriter::WriteMany)
      .def("write_columns", &PyRecordWriter::WriteColumns, nb::arg("columns"),
           nb::arg("num_rows"))
      .def("flush", &PyRecordWriter::Flush)
      .def("close", &PyRecordWriter::Close)
      .def("abort", &PyRecordWriter::Abort)
      .def_prop_ro("records_written", &PyRecordWriter::records_written);

  nb::class_<PyRecordReader>(m, "RecordReader")
      .def(nb::init<const std::string&, const std::optional<std::string>&, bool, uint64_t,
                    std::optional<uint64_t>, bool>(),
           nb::arg("path"), nb::arg("compression") = nb::none(),
           nb::arg("skip_corrupt") = false, nb::arg("start_offset") = 0,
           nb::arg("end_offset") = nb::none(), nb::arg("verify") = true)
      .def("read", &PyRecordReader::Read)
      .def("read_batch", &PyRecordReader::ReadBatch, nb::arg("n"))
      .def_prop_ro("offset", &PyRecordReader::offset)
      .def("stats", &PyRecordReader::stats);

  m.def(
      "list_files",
      [](const std::vector<std::string>& paths) {
        Result<std::vector<std::string>> r = [&] {
          nb::gil_scoped_release release;
          return ExpandPaths(paths);
        }();
        return ValueOrThrow(std::move(r));
      },
      nb::arg("paths"));

  m.def(
      "record_index",
      [](const std::string& path, const std::optional<std::string>& c) {
        Compression kind = CompressionFor(path, c);
        Result<std::vector<uint64_t>> r = [&] {
          nb::gil_scoped_release release;
          return BuildRecordIndex(path, kind);
        }();
        return ValueOrThrow(std::move(r));
      },
      nb::arg("path"), nb::arg("compression") = nb::none());

  m.def(
      "count_records",
      [](const std::vector<std::string>& paths,
         const std::optional<std::string>& compression, bool verify) {
        uint64_t n = 0;
        nb::gil_scoped_release release;
        for (const auto& path : paths) {
          RecordReaderOptions o;
          o.compression = CompressionFor(path, compression);
          o.verify_data_crc = verify;
          auto reader = ValueOrThrow(RecordReader::Open(path, o));
          std::string_view rec;
          while (true) {
            Status st = reader->ReadRecord(&rec);
            if (st.IsOutOfRange()) break;
            ThrowIfError(st);
            ++n;
          }
        }
        return n;
      },
      nb::arg("paths"), nb::arg("compression") = nb::none(), nb::arg("verify") = true);

  m.def(
      "encode_example",
      [](nb::handle features) {
        Example ex;
        ex.features = ToFeatureMap(features);
        std::string out;
        EncodeExample(ex, &out);
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("features"));

  m.def(
      "decode_example",
      [](nb::handle data) {
        Example ex;
        ThrowIfError(DecodeExample(BytesView(data), &ex));
        return FromFeatureMap(std::move(ex.features));
      },
      nb::arg("data"));

  m.def(
      "encode_sequence_example",
      [](nb::handle context, nb::handle feature_lists) {
        SequenceExample se;
        se.context = ToFeatureMap(context);
        for (nb::handle item : feature_lists.attr("items")()) {
          std::string name = nb::cast<std::string>(item[0]);
          auto& list = se.feature_lists[name];
          for (nb::handle step : item[1]) list.push_back(ToFeature(step, name));
        }
        std::string out;
        EncodeSequenceExample(se, &out);
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("context"), nb::arg("feature_lists"));

  m.def(
      "decode_sequence_example",
      [](nb::handle data) {
        SequenceExample se;
        ThrowIfError(DecodeSequenceExample(BytesView(data), &se));
        nb::dict lists;
        for (auto& [k, steps] : se.feature_lists) {
          nb::list l;
          for (auto& f : steps) l.append(FromFeature(std::move(f)));
          lists[nb::str(k.data(), k.size())] = l;
        }
        return nb::make_tuple(FromFeatureMap(std::move(se.context)), lists);
      },
      nb::arg("data"));

  m.def(
      "read_columns",
      [](const std::vector<std::string>& paths, nb::handle schema_rows,
         const std::optional<std::string>& compression) {
        auto decoder = ValueOrThrow(ColumnarDecoder::Make(ToSchema(schema_rows)));
        {
          nb::gil_scoped_release release;
          ForEachRecord(paths, compression, SIZE_MAX,
                        [&](std::string_view rec) { return decoder.Append(rec); });
        }
        size_t rows = decoder.num_rows();
        return nb::make_tuple(rows,
                              ColumnsToPython(decoder.Finish(), decoder.schema(), rows));
      },
      nb::arg("paths"), nb::arg("schema"), nb::arg("compression") = nb::none());

  m.def(
      "decode_columns",
      [](nb::handle records, nb::handle schema_rows) {
        auto decoder = ValueOrThrow(ColumnarDecoder::Make(ToSchema(schema_rows)));
        for (nb::handle r : records) ThrowIfError(decoder.Append(BytesView(r)));
        size_t rows = decoder.num_rows();
        return nb::make_tuple(rows,
                              ColumnsToPython(decoder.Finish(), decoder.schema(), rows));
      },
      nb::arg("records"), nb::arg("schema"));

  m.def(
      "infer_schema",
      [](const std::vector<std::string>& paths,
         const std::optional<std::string>& compression, size_t max_records) {
        SchemaInferrer inferrer;
        {
          nb::gil_scoped_release release;
          ForEachRecord(paths, compression, max_records,
                        [&](std::string_view rec) { return inferrer.Append(rec); });
        }
        auto schema = ValueOrThrow(inferrer.Schema());
        nb::list rows;
        for (const auto& s : schema) {
          const FeatureStats& st = inferrer.stats().at(s.name);
          rows.append(nb::make_tuple(s.name, std::string(DTypeName(s.dtype)), s.var_len,
                                     nb::cast(s.shape), st.present, st.min_length,
                                     st.max_length));
        }
        return nb::make_tuple(inferrer.num_rows(), rows);
      },
      nb::arg("paths"), nb::arg("compression") = nb::none(),
      nb::arg("max_records") = SIZE_MAX);
}

}  // namespace sparktf::python
