// nemo.lens._lens: the pybind11 bindings of lens's configuration, lifecycle, metrics, step
// progress, span groups, rank and sampling strategies, propagation and log records, on lens's
// public C++ API (include/lens), one area a file (bindings.hpp); the span primitives are C-level
// types (span_site.cpp, span_object.cpp, span_start.cpp). Errors before and at setup raise
// ValueError with the C++ message; after setup nothing here raises into the caller's code, and
// every call that may wait releases the GIL.
#include "bindings.hpp"
#include "lens/version.hpp"
#include "span_object.hpp"
#include "span_site.hpp"
#include "span_start.hpp"
#include "training_bindings.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_lens, m) {
  using namespace lens;
  using namespace lens::python;
  m.doc() = "The native core of lens-cpp behind the nemo.lens package.";
  m.attr("__version__") = kVersion;

  add_config_bindings(m);
  py::class_<TelemetryHandle> handle = add_setup_bindings(m);
  add_metric_bindings(m, handle);
  add_progress_bindings(m);
  add_span_group_bindings(m);
  add_rank_strategy_bindings(m);
  add_sampler_bindings(m);
  add_propagation_bindings(m);
  add_log_bindings(m);
  add_training_bindings(m);
  add_megatron_bindings(m);
  if (!add_span_types(m.ptr()) || !add_span_object_type(m.ptr()) ||
      !add_span_start_functions(m.ptr())) {
    throw py::error_already_set();
  }
}
