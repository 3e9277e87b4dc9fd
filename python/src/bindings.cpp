// What the binding areas share (see bindings.hpp): Python values as lens attributes. Runs with the
// GIL held.
#include "bindings.hpp"

#include <cstdint>
#include <string>

namespace py = pybind11;

namespace lens::python {

Attributes to_attributes(const py::dict& values) {
  Attributes attributes;
  for (auto [key, value] : values) {
    if (!py::isinstance<py::str>(key)) continue;
    std::string name = key.cast<std::string>();
    try {
      if (py::isinstance<py::bool_>(value)) {
        attributes.emplace(name, value.cast<bool>());
      } else if (py::isinstance<py::int_>(value)) {
        attributes.emplace(name, value.cast<std::int64_t>());
      } else if (py::isinstance<py::float_>(value)) {
        attributes.emplace(name, value.cast<double>());
      } else if (py::isinstance<py::str>(value)) {
        attributes.emplace(name, value.cast<std::string>());
      }
    } catch (const py::cast_error&) {
      // An int beyond 64 bits: left out.
    }
  }
  return attributes;
}

}  // namespace lens::python
