#include "bindings.h"

namespace sparktf::python {

void InitErrors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object errors = nb::module_::import_("sparktf.errors");
      nb::object cls =
          errors.attr("exception_class")(static_cast<int>(e.status().code()));
      PyErr_SetString(cls.ptr(), e.status().message().c_str());
    }
  });
  m.def("status_code_names", [] {
    nb::dict out;
    for (int c = 0; c <= static_cast<int>(StatusCode::kLastCode); ++c) {
      out[nb::int_(c)] = std::string(StatusCodeName(static_cast<StatusCode>(c)));
    }
    return out;
  });
}

}  // namespace sparktf::python
