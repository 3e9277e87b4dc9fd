// Log records from Python (see bindings.hpp): the logging handler's records as lens log records,
// with Python's levels mapped onto lens's. Entry points run with the GIL held.
#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "lens/log.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// Python logging levels (DEBUG 10 ... CRITICAL 50) as lens log levels.
log::Level level_of(int python_level) {
  if (python_level >= 50) return log::Level::fatal;
  if (python_level >= 40) return log::Level::error;
  if (python_level >= 30) return log::Level::warn;
  if (python_level >= 20) return log::Level::info;
  if (python_level >= 10) return log::Level::debug;
  return log::Level::trace;
}

}  // namespace

void add_log_bindings(py::module_& m) {
  m.def(
      "emit_log",
      [](int level, const std::string& body, const std::string& logger, const std::string& path,
         int line, const std::string& function) {
        log::Level lens_level = level_of(level);
        if (!log::enabled(lens_level)) return;
        log::emit(lens_level, body,
                  {{"logger.name", logger},
                   {"code.filepath", path},
                   {"code.lineno", std::int64_t{line}},
                   {"code.function", function}});
      },
      py::arg("level"), py::arg("body"), py::arg("logger") = "", py::arg("path") = "",
      py::arg("line") = 0, py::arg("function") = "");
  m.def(
      "setup_logging_bridge", [](int level) { return setup_logging_bridge(level_of(level)); },
      py::arg("level") = 20,
      "Lets log records of `level` and above through; True when records flow now.");
}

}  // namespace lens::python
