// Span groups from Python (see bindings.hpp): which groups are on, and the registration of a
// library's own groups and presets. A bad registration or spec raises ValueError with the C++
// message.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "lens/groups.hpp"

namespace py = pybind11;

namespace lens::python {

void add_span_group_bindings(py::module_& m) {
  m.def("is_span_group_enabled",
        [](const std::string& group) { return is_span_group_enabled(group); });
  m.def("set_enabled_span_groups",
        [](const std::set<std::string>& groups) { set_enabled_span_groups(groups); });
  m.def("enabled_span_groups", &enabled_span_groups);
  m.def("registered_span_groups", &registered_span_groups);
  m.def(
      "register_span_groups",
      [](const std::string& ns, const std::vector<std::string>& groups,
         const std::map<std::string, std::vector<std::string>>& presets, bool allow_override) {
        raise_if_failed(register_span_groups(ns, groups, presets, allow_override));
      },
      py::arg("namespace"), py::arg("groups"), py::arg("presets") = py::dict(),
      py::arg("allow_override") = false);
  m.def("resolve_span_groups",
        [](const std::string& spec) { return value_or_raise(resolve_span_groups(spec)); });
}

}  // namespace lens::python
