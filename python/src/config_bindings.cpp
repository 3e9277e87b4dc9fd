// NativeConfig: lens's C++ Config as a Python class (see bindings.hpp). A bad exporter name or a
// bad ENABLED raises ValueError with the C++ message.
#include <string>

#include "bindings.hpp"
#include "lens/config.hpp"

namespace py = pybind11;

namespace lens::python {

void add_config_bindings(py::module_& m) {
  py::class_<Config>(m, "NativeConfig",
                     "lens's C++ configuration (nemo.lens.NemoLensConfig is built on it); "
                     "from_env reads it from the environment.")
      .def(py::init<>())
      .def_static(
          "from_env",
          [](const std::string& prefix, const std::string& fallback_prefix) {
            return value_or_raise(Config::from_env(prefix, fallback_prefix));
          },
          py::arg("prefix") = std::string(kDefaultPrefix), py::arg("fallback_prefix") = "",
          "Reads PREFIX_KEY, then FALLBACK_KEY, then the default; raises ValueError when ENABLED "
          "does not parse (other bad values are reported by setup_telemetry).")
      .def_readwrite("enabled", &Config::enabled)
      .def_readwrite("service_name", &Config::service_name)
      .def_readwrite("export_strategy", &Config::rank_strategy)
      .def_readwrite("rank_strategy", &Config::rank_strategy)
      .def_readwrite("export_rank", &Config::export_rank)
      .def_readwrite("export_sample_rate", &Config::export_sample_rate)
      .def_readwrite("sampling_strategy", &Config::sampling_strategy)
      .def_readwrite("traces_enabled", &Config::traces_enabled)
      .def_readwrite("metrics_enabled", &Config::metrics_enabled)
      .def_readwrite("logs_enabled", &Config::logs_enabled)
      .def_readwrite("span_groups", &Config::span_groups)
      .def_property(
          "exporter", [](const Config& c) { return std::string(to_string(c.exporter)); },
          [](Config& c, const std::string& name) {
            auto kind = exporter_kind(name);
            if (!kind) {
              throw py::value_error("Unknown exporter type: '" + name +
                                    "'. Expected one of: " + std::string(kAcceptedExporters));
            }
            c.exporter = *kind;
          })
      .def_readwrite("file_path", &Config::file_path)
      .def_readwrite("run_id", &Config::run_id)
      .def_readwrite("user", &Config::user_id)
      .def_readwrite("wandb_entity", &Config::wandb_entity)
      .def_readwrite("wandb_project", &Config::wandb_project)
      .def("source_of", &Config::source_of, py::arg("field"),
           "'default', 'env:NAME' or 'cli:--flag' for a field name.");
}

}  // namespace lens::python
