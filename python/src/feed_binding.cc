// sparktf._native feed API: shared-memory rings and columnar batches.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>

#include "bindings.h"
#include "sparktf/feed/batch.h"
#include "sparktf/feed/ring.h"

namespace sparktf::python {
namespace {

using namespace sparktf::feed;

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

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

const char* NumpyDtype(ColumnType t) {
  switch (t) {
    case ColumnType::kFloat32: return "float32";
    case ColumnType::kFloat64: return "float64";
    case ColumnType::kInt32: return "int32";
    case ColumnType::kInt64: return "int64";
    case ColumnType::kUInt8: return "uint8";
    case ColumnType::kBool: return "bool";
    case ColumnType::kBytes: return "object";
  }
  return "object";
}

}  // namespace

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

  // Returns (rows, dict name -> numpy array (a copy) or list of bytes).
  m.def("decode_batch", [](nb::bytes data) {
    uint64_t rows = 0;
    std::vector<ColumnView> cols;
    ThrowIfError(DecodeBatch({data.c_str(), data.size()}, &rows, &cols));
    nb::module_ np = nb::module_::import_("numpy");
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
      nb::object flat = np.attr("frombuffer")(nb::bytes(c.data.data(), c.data.size()),
                                              NumpyDtype(c.type));
      nb::list shape;
      for (uint64_t d : c.dims) shape.append(d);
      out[c.name.c_str()] = flat.attr("reshape")(nb::tuple(shape));
    }
    return nb::make_tuple(rows, out);
  }, nb::arg("data"));
}

}  // namespace sparktf::python
