// The pybind11 areas of nemo.lens._lens, one file each (module.cpp calls them in order), and what
// they share. Errors before and at setup raise ValueError with the C++ message; after setup nothing
// raises into the caller's code. Not API: entry points run with the GIL held.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every area: one set of type casters in the whole module

#include <optional>
#include <string>
#include <utility>

#include "lens/attributes.hpp"
#include "lens/result.hpp"
#include "lens/telemetry.hpp"

namespace lens::python {

// ---- What the areas share (bindings.cpp) --------------------------------------------------------

template <class T>
T value_or_raise(Result<T> result) {
  if (!result.ok()) throw pybind11::value_error(result.message());
  return std::move(result.value());
}

inline void raise_if_failed(const Status& status) {
  if (!status.ok()) throw pybind11::value_error(status.message());
}

// Python values as attribute values: bool, int, float and str; other values are left out
// (docs/python.md, "Spans").
Attributes to_attributes(const pybind11::dict& values);

// A trace or span id as lowercase hex digits.
template <class Id>
std::string hex_id(const Id& id) {
  char text[2 * Id::kSize];
  id.ToLowerBase16(text);
  return std::string(text, sizeof(text));
}

// ---- The areas ----------------------------------------------------------------------------------

// NativeConfig (config_bindings.cpp).
void add_config_bindings(pybind11::module_& m);

// TelemetryHandle's lifecycle (is_exporting, run_id, stats, force_flush, shutdown) and
// setup_telemetry (setup_bindings.cpp). Returns the TelemetryHandle class, which the metric
// bindings give its instrument factories.
pybind11::class_<TelemetryHandle> add_setup_bindings(pybind11::module_& m);

// TelemetryHandle's counter, histogram, gauge, up_down_counter and observable, the instrument
// types and _stop_observing (metric_bindings.cpp).
void add_metric_bindings(pybind11::module_& m, pybind11::class_<TelemetryHandle>& handle);

// Step progress for the hang watchdog and counted collectives: note_step_completed,
// note_iteration_started, expect_training_steps, collective_* (progress_bindings.cpp).
void add_progress_bindings(pybind11::module_& m);

// Span group switches and registration (span_group_bindings.cpp).
void add_span_group_bindings(pybind11::module_& m);

// StrategySettings and the registry of rank strategies (rank_strategy_bindings.cpp).
void add_rank_strategy_bindings(pybind11::module_& m);

// Sampler, the standard and rank-aware samplers and the registry of sampling strategies
// (sampler_bindings.cpp).
void add_sampler_bindings(pybind11::module_& m);

// W3C propagation: inject and extract (propagation_bindings.cpp).
void add_propagation_bindings(pybind11::module_& m);

// Log records: emit_log and setup_logging_bridge (log_bindings.cpp).
void add_log_bindings(pybind11::module_& m);

// The Megatron integration: the megatron_* functions (megatron_bindings.cpp).
void add_megatron_bindings(pybind11::module_& m);

// ---- Between setup and the rank strategies ------------------------------------------------------

// A Python exception raised by a rank strategy during setup, raised again once setup returned.
struct PendingStrategyError {
  std::optional<pybind11::error_already_set> error;
};

// While `pending` is set (setup), the first exception a Python rank strategy raises, or its
// TypeError for a result that is not a bool, goes into it; null: none is kept
// (rank_strategy_bindings.cpp).
void keep_strategy_errors_in(PendingStrategyError* pending);

}  // namespace lens::python
