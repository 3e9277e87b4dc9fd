// The metric instruments of a TelemetryHandle's meter as Python objects (see bindings.hpp):
// counter, histogram, gauge, up-down counter and observable instruments whose Python callbacks run
// at each collection on the metric reader's thread (with the GIL).
#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/metrics/async_instruments.h>
#include <opentelemetry/metrics/meter.h>
#include <opentelemetry/metrics/observer_result.h>
#include <opentelemetry/metrics/sync_instruments.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.hpp"
#include "lens/metrics.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// The metric instruments, made on a handle's meter (a no-op meter records nothing).
struct PyCounter {
  metrics::Counter<double> counter;
  void add(double value, const py::dict& attributes) {
    if (attributes.empty()) {
      counter.add(value, {});
    } else {
      counter.bind(to_attributes(attributes)).add(value);
    }
  }
};
struct PyHistogram {
  metrics::Histogram<double> histogram;
  void record(double value, const py::dict& attributes) {
    if (attributes.empty()) {
      histogram.record(value, {});
    } else {
      histogram.bind(to_attributes(attributes)).record(value);
    }
  }
};
struct PyGauge {
  metrics::Gauge<double> gauge;
  void record(double value, const py::dict& attributes) {
    gauge.record(value, to_attributes(attributes));
  }
};

// lens attributes as opentelemetry-cpp's (views into `attributes`, which must outlive them).
std::map<std::string, opentelemetry::common::AttributeValue> otel_attributes(
    const Attributes& attributes,
    std::vector<std::vector<opentelemetry::nostd::string_view>>& views) {
  std::map<std::string, opentelemetry::common::AttributeValue> out;
  for (const auto& [key, value] : attributes) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            out.emplace(key, opentelemetry::nostd::string_view(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, bool> || std::is_same_v<V, std::int64_t> ||
                               std::is_same_v<V, double>) {
            out.emplace(key, v);
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            auto& list = views.emplace_back();
            for (const std::string& s : v) list.emplace_back(s.data(), s.size());
            out.emplace(key, opentelemetry::nostd::span<const opentelemetry::nostd::string_view>(
                                 list.data(), list.size()));
          } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>> ||
                               std::is_same_v<V, std::vector<double>>) {
            out.emplace(
                key, opentelemetry::nostd::span<const typename V::value_type>(v.data(), v.size()));
          }  // bool arrays are left out (std::vector<bool> has no contiguous storage)
        },
        value);
  }
  return out;
}

// An up-down counter: opentelemetry-cpp's (lens's metrics layer has none of its own).
struct PyUpDownCounter {
  std::shared_ptr<opentelemetry::metrics::UpDownCounter<double>> counter;
  void add(double value, const py::dict& attributes) {
    if (!counter) return;
    const Attributes converted = to_attributes(attributes);
    std::vector<std::vector<opentelemetry::nostd::string_view>> views;
    const auto otel = otel_attributes(converted, views);
    counter->Add(value, opentelemetry::common::KeyValueIterableView<decltype(otel)>(otel));
  }
};

// Python callables observed at each collection, on the metric reader's thread (with the GIL).
// Off once the interpreter is past its own shutdown (nemo.lens turns it off at exit).
std::atomic<bool> g_observe_python{true};

struct ObservableState {
  py::list callbacks;  // each: callback(options) -> iterable of Observation(value, attributes)
};

void observe(opentelemetry::metrics::ObserverResult result, void* state) noexcept {
  if (!g_observe_python.load(std::memory_order_acquire) || !Py_IsInitialized() ||
      _Py_IsFinalizing()) {
    return;
  }
  py::gil_scoped_acquire gil;
  try {
    auto* observable = static_cast<ObservableState*>(state);
    py::object options = py::module_::import("nemo.lens.metrics").attr("CallbackOptions")();
    for (py::handle callback : observable->callbacks) {
      py::object observations = callback(options);
      if (observations.is_none()) continue;
      for (py::handle observation : observations) {
        const double value = py::float_(observation.attr("value"));
        py::object attributes = observation.attr("attributes");
        const Attributes converted =
            attributes.is_none() ? Attributes{} : to_attributes(py::dict(attributes));
        std::vector<std::vector<opentelemetry::nostd::string_view>> views;
        const auto otel = otel_attributes(converted, views);
        const opentelemetry::common::KeyValueIterableView<decltype(otel)> view(otel);
        if (auto* d = opentelemetry::nostd::get_if<
                opentelemetry::nostd::shared_ptr<opentelemetry::metrics::ObserverResultT<double>>>(
                &result)) {
          (*d)->Observe(value, view);
        } else if (auto* i = opentelemetry::nostd::get_if<opentelemetry::nostd::shared_ptr<
                       opentelemetry::metrics::ObserverResultT<std::int64_t>>>(&result)) {
          (*i)->Observe(static_cast<std::int64_t>(value), view);
        }
      }
    }
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("nemo.lens observable instrument callback");
  } catch (...) {
  }
}

// An observable counter, up-down counter or gauge with its Python callbacks.
struct PyObservable {
  opentelemetry::nostd::shared_ptr<opentelemetry::metrics::ObservableInstrument> instrument;
  std::unique_ptr<ObservableState> state;
  PyObservable() = default;
  PyObservable(PyObservable&&) = default;
  ~PyObservable() {
    if (instrument && state) instrument->RemoveCallback(observe, state.get());
  }
};

// counter, histogram, gauge, up_down_counter and observable on TelemetryHandle: made on its meter.
void add_instrument_factories(py::class_<TelemetryHandle>& handle) {
  handle
      .def(
          "counter",
          [](TelemetryHandle& h, const std::string& name, const std::string& description,
             const std::string& unit) {
            return PyCounter{metrics::make_counter<double>(*h.meter(), name, description, unit)};
          },
          py::arg("name"), py::arg("description") = "", py::arg("unit") = "")
      .def(
          "histogram",
          [](TelemetryHandle& h, const std::string& name, const std::string& description,
             const std::string& unit) {
            return PyHistogram{
                metrics::make_histogram<double>(*h.meter(), name, description, unit)};
          },
          py::arg("name"), py::arg("description") = "", py::arg("unit") = "")
      .def(
          "gauge",
          [](TelemetryHandle& h, const std::string& name, const std::string& description,
             const std::string& unit) {
            return PyGauge{metrics::make_gauge<double>(*h.meter(), name, description, unit)};
          },
          py::arg("name"), py::arg("description") = "", py::arg("unit") = "")
      .def(
          "up_down_counter",
          [](TelemetryHandle& h, const std::string& name, const std::string& description,
             const std::string& unit) {
            auto meter = h.meter();
            return PyUpDownCounter{std::shared_ptr<opentelemetry::metrics::UpDownCounter<double>>(
                meter->CreateDoubleUpDownCounter(name, description, unit).release())};
          },
          py::arg("name"), py::arg("description") = "", py::arg("unit") = "")
      .def(
          "observable",
          [](TelemetryHandle& h, const std::string& kind, const std::string& name,
             const std::string& description, const std::string& unit, py::list callbacks) {
            auto meter = h.meter();
            PyObservable observable;
            if (kind == "counter") {
              observable.instrument = meter->CreateDoubleObservableCounter(name, description, unit);
            } else if (kind == "up_down_counter") {
              observable.instrument =
                  meter->CreateDoubleObservableUpDownCounter(name, description, unit);
            } else {
              observable.instrument = meter->CreateDoubleObservableGauge(name, description, unit);
            }
            observable.state = std::make_unique<ObservableState>();
            observable.state->callbacks = std::move(callbacks);
            if (observable.instrument) {
              observable.instrument->AddCallback(observe, observable.state.get());
            }
            return observable;
          },
          py::arg("kind"), py::arg("name"), py::arg("description"), py::arg("unit"),
          py::arg("callbacks"));
}

}  // namespace

void add_metric_bindings(py::module_& m, py::class_<TelemetryHandle>& handle) {
  // Before the instrument types, as their factories always were: their signatures name them by
  // their C++ types.
  add_instrument_factories(handle);
  py::class_<PyCounter>(m, "Counter")
      .def("add", &PyCounter::add, py::arg("value"), py::arg("attributes") = py::dict());
  py::class_<PyHistogram>(m, "Histogram")
      .def("record", &PyHistogram::record, py::arg("value"), py::arg("attributes") = py::dict());
  py::class_<PyGauge>(m, "Gauge")
      .def("record", &PyGauge::record, py::arg("value"), py::arg("attributes") = py::dict());
  py::class_<PyUpDownCounter>(m, "UpDownCounter")
      .def("add", &PyUpDownCounter::add, py::arg("value"), py::arg("attributes") = py::dict());
  py::class_<PyObservable>(m, "Observable");
  m.def(
      "_stop_observing", [] { g_observe_python.store(false, std::memory_order_release); },
      "No Python callback is observed any more (interpreter exit).");
}

}  // namespace lens::python
