// nemo.lens._lens: the pybind11 bindings of lens's configuration, lifecycle, span groups, rank
// strategies, propagation, metrics and log records, on lens's public C++ API (include/lens). The
// span primitives are C-level types (span_site.cpp, span_object.cpp). Errors before and at setup
// raise ValueError with the C++ message; after setup nothing here raises into the caller's code,
// and every call that may wait releases the GIL.
#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/metrics/async_instruments.h>
#include <opentelemetry/metrics/meter.h>
#include <opentelemetry/metrics/observer_result.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/trace/context.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lens/collectives.hpp"
#include "lens/config.hpp"
#include "lens/groups.hpp"
#include "lens/log.hpp"
#include "lens/metrics.hpp"
#include "lens/propagation.hpp"
#include "lens/rank_info.hpp"
#include "lens/sampling.hpp"
#include "lens/span.hpp"
#include "lens/step_progress.hpp"
#include "lens/strategies.hpp"
#include "lens/telemetry.hpp"
#include "lens/version.hpp"
#include "span_object.hpp"
#include "span_site.hpp"
#include "training_bindings.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

template <class T>
T value_or_raise(Result<T> result) {
  if (!result.ok()) throw py::value_error(result.message());
  return std::move(result.value());
}

void raise_if_failed(const Status& status) {
  if (!status.ok()) throw py::value_error(status.message());
}

}  // namespace

// Python values as attribute values: bool, int, float and str; other values are left out
// (docs/python.md, "Spans").
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

namespace {

// A Python exception raised by a rank strategy during setup, raised again once setup returned.
struct PendingStrategyError {
  std::optional<py::error_already_set> error;
};
PendingStrategyError* g_pending_strategy_error = nullptr;

// A Python callable (settings, rank, world_size) -> bool as a RankStrategy (settings: a
// StrategySettings, export_rank and export_sample_rate). The reference is kept
// for the life of the process (the registry may outlive the interpreter).
RankStrategy python_rank_strategy(py::function function) {
  PyObject* callable = function.release().ptr();
  return [callable](const StrategySettings& settings, const RankInfo& rank) {
    py::gil_scoped_acquire gil;
    try {
      py::object result =
          py::reinterpret_borrow<py::function>(callable)(settings, rank.rank, rank.world_size);
      return result.cast<bool>();
    } catch (py::error_already_set& error) {
      if (g_pending_strategy_error != nullptr && !g_pending_strategy_error->error) {
        g_pending_strategy_error->error.emplace(std::move(error));
      }
    } catch (const py::cast_error&) {
      if (g_pending_strategy_error != nullptr && !g_pending_strategy_error->error) {
        PyErr_SetString(PyExc_TypeError, "a rank strategy must return a bool");
        g_pending_strategy_error->error.emplace();
      }
    }
    return false;
  };
}

// A native sampler handed to and from Python (factories of sampling strategies compose them).
struct PySampler {
  std::shared_ptr<const Sampler> sampler;
};

// A Python callable (settings, rank, world_size, default_sampler) -> Sampler as a factory. Its
// exception becomes the registry's "Sampling strategy 'x' failed: ..." error at setup. The
// reference is kept for the life of the process.
SamplingStrategyFactory python_sampling_factory(py::function function) {
  PyObject* callable = function.release().ptr();
  return [callable](const StrategySettings& settings, const RankInfo& rank,
                    std::shared_ptr<const Sampler> default_sampler) {
    py::gil_scoped_acquire gil;
    std::string failure;
    try {
      py::object result = py::reinterpret_borrow<py::function>(callable)(
          settings, rank.rank, rank.world_size, PySampler{std::move(default_sampler)});
      if (py::isinstance<PySampler>(result)) return result.cast<PySampler>().sampler;
      failure = "the factory returned " +
                std::string(py::str(py::type::of(result).attr("__name__"))) +
                ", not a lens.Sampler";
    } catch (py::error_already_set& error) {
      // "<Type>: <message>", without the traceback pybind11 appends to what().
      failure = std::string(py::str(error.type().attr("__name__"))) + ": " +
                std::string(py::str(error.value()));
    }
    throw std::runtime_error(failure);
  };
}

TelemetryHandle setup(Config config, std::optional<int> rank, std::optional<int> world_size,
                      const py::dict& resource_attributes, bool allow_reinit, py::object broadcast,
                      std::optional<bool> exporting) {
  RankInfo rank_info;
  if (rank.has_value() || world_size.has_value()) {
    RankInfo detected = value_or_raise(RankInfo::detect());
    rank_info = value_or_raise(
        RankInfo::make(rank.value_or(detected.rank), world_size.value_or(detected.world_size),
                       detected.local_rank, detected.local_world_size, detected.node_rank));
  } else {
    rank_info = value_or_raise(RankInfo::detect());
  }
  SetupOverrides overrides;
  overrides.allow_reinit = allow_reinit;
  if (exporting.has_value()) {
    // Decided in Python (nemo.lens.strategies, NeMo Lens's registry of export strategies).
    overrides.rank_strategy = [decision = *exporting](const StrategySettings&, const RankInfo&) {
      return decision;
    };
  }
  std::optional<PythonCollective> collective;
  if (!broadcast.is_none()) {
    collective.emplace(std::move(broadcast), rank_info.rank, rank_info.world_size);
    overrides.collective = &*collective;
  }
  PendingStrategyError pending;
  g_pending_strategy_error = &pending;
  Result<TelemetryHandle> handle = setup_telemetry(
      std::move(config), rank_info, to_attributes(resource_attributes), std::move(overrides));
  g_pending_strategy_error = nullptr;
  if (pending.error) {
    if (handle.ok()) {
      py::gil_scoped_release release;
      (void)handle.value().shutdown(std::chrono::milliseconds(1000));
    }
    throw std::move(*pending.error);
  }
  return value_or_raise(std::move(handle));
}

py::dict stats_dict(const TelemetryStats& s) {
  py::dict d;
  d["spans_started"] = s.spans_started;
  d["spans_ended"] = s.spans_ended;
  d["spans_exported"] = s.spans_exported;
  d["spans_dropped"] = s.spans_dropped;
  d["spans_failed"] = s.spans_failed;
  d["spans_truncated"] = s.spans_truncated;
  d["metric_points_exported"] = s.metric_points_exported;
  d["metric_points_failed"] = s.metric_points_failed;
  d["log_records_emitted"] = s.log_records_emitted;
  d["log_records_exported"] = s.log_records_exported;
  d["log_records_dropped"] = s.log_records_dropped;
  d["exports_failed"] = s.exports_failed;
  return d;
}

// Python logging levels (DEBUG 10 ... CRITICAL 50) as lens log levels.
log::Level level_of(int python_level) {
  if (python_level >= 50) return log::Level::fatal;
  if (python_level >= 40) return log::Level::error;
  if (python_level >= 30) return log::Level::warn;
  if (python_level >= 20) return log::Level::info;
  if (python_level >= 10) return log::Level::debug;
  return log::Level::trace;
}

template <class Id>
std::string hex_id(const Id& id) {
  char text[2 * Id::kSize];
  id.ToLowerBase16(text);
  return std::string(text, sizeof(text));
}

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

}  // namespace
}  // namespace lens::python

PYBIND11_MODULE(_lens, m) {
  using namespace lens;
  using namespace lens::python;
  m.doc() = "The native core of lens-cpp behind the nemo.lens package.";
  m.attr("__version__") = kVersion;

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

  py::class_<TelemetryHandle>(m, "TelemetryHandle", "What setup_telemetry returns.")
      .def("is_exporting", &TelemetryHandle::is_exporting)
      .def_property_readonly("run_id", &TelemetryHandle::run_id)
      .def_property_readonly("stats",
                             [](const TelemetryHandle& h) { return stats_dict(h.stats()); })
      .def(
          "force_flush",
          [](TelemetryHandle& h, int timeout_ms) {
            Status status;
            {
              py::gil_scoped_release release;
              status = h.force_flush(std::chrono::milliseconds(timeout_ms));
            }
            return status.ok();
          },
          py::arg("timeout_ms") = 5000, "Exports what finished so far; False on timeout.")
      .def(
          "shutdown",
          [](TelemetryHandle& h, int timeout_ms) {
            Status status;
            {
              py::gil_scoped_release release;
              status = h.shutdown(std::chrono::milliseconds(timeout_ms));
            }
            return status.ok();
          },
          py::arg("timeout_ms") = 5000,
          "Ends open spans (truncated), flushes and shuts down within the timeout; idempotent. "
          "False when something did not finish in time.")
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

  m.def("setup_telemetry", &setup, py::arg("config"), py::arg("rank") = py::none(),
        py::arg("world_size") = py::none(), py::arg("resource_attributes") = py::dict(),
        py::arg("allow_reinit") = false, py::arg("broadcast") = py::none(),
        py::arg("exporting") = py::none(),
        "Sets telemetry up for this process; raises ValueError naming the bad variable. rank and "
        "world_size default to the launcher's (torchrun, MPI, SLURM). broadcast(payload: bytes, "
        "root: int) -> bytes, a collective every rank calls, lets rank 0 share a generated run "
        "id (see lens.torch_broadcast).");

  m.def(
      "note_step_completed", [] { note_step_completed(); },
      "Marks one training step (one optimizer update) as finished: the step the hang watchdog "
      "watches (HANG_TIMEOUT, docs/configuration.md#hang-reports). Call it once per step, after "
      "the step's span; it costs a clock read and never raises.");
  // Counted collectives (lens/collectives.hpp): a group is a capsule of its counter (which lives
  // as long as the process); operation names are interned once each, since the counters keep a
  // pointer to them.
  m.def(
      "collective_group",
      [](const std::string& name, const std::vector<std::int64_t>& ranks) {
        return py::capsule(&collective_group(name, ranks), "lens.CollectiveGroup");
      },
      "The process group `name` (with its global `ranks` on the first call) whose collectives "
      "are counted, for collective_enter/collective_finish.");
  m.def(
      "collective_enter",
      [](const py::capsule& group, const std::string& operation, std::uint64_t bytes) {
        static std::mutex mutex;
        static std::set<std::string>* interned = new std::set<std::string>();
        const char* op = nullptr;
        {
          std::lock_guard<std::mutex> lock(mutex);
          op = interned->insert(operation).first->c_str();
        }
        return group.get_pointer<CollectiveGroup>()->enter(op, bytes);
      },
      "Counts the group's next collective `operation` of `bytes` as entered; its sequence number.");
  m.def(
      "collective_finish",
      [](const py::capsule& group, std::uint64_t seq) {
        group.get_pointer<CollectiveGroup>()->finish(seq);
      },
      "Counts collective `seq` of the group as finished.");
  m.def(
      "collective_state",
      [](const py::capsule& group) {
        const CollectiveGroup::State state = group.get_pointer<CollectiveGroup>()->state();
        py::dict out;
        out["op"] = state.operation != nullptr ? state.operation : "";
        out["seq"] = state.seq;
        out["bytes"] = state.bytes;
        out["finished_seq"] = state.finished_seq;
        out["finished_op"] = state.finished_operation != nullptr ? state.finished_operation : "";
        return out;
      },
      "The group's counts: op, seq, bytes (the newest entered), finished_seq, finished_op.");
  m.def(
      "note_iteration_started", [](std::int64_t iteration) { note_iteration_started(iteration); },
      "The training iteration now running, for the hang reports (lens.hang.iteration).");
  m.def(
      "expect_training_steps", [] { expect_training_steps(); },
      "Says this process trains: watched from setup until its first step with the start-up "
      "timeout (HANG_STARTUP_TIMEOUT). Call it before setup_telemetry.");
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

  py::class_<StrategySettings>(m, "StrategySettings",
                               "What rank and sampling strategies read besides the rank.")
      .def_readonly("export_rank", &StrategySettings::export_rank,
                    "P_EXPORT_RANK: single_rank's rank (negative: the last rank).")
      .def_readonly("export_sample_rate", &StrategySettings::export_sample_rate,
                    "P_EXPORT_SAMPLE_RATE: the rate of `sampled` and of the rank-aware sampler.");
  m.def(
      "register_rank_strategy",
      [](const std::string& name, py::function strategy, bool allow_override) {
        raise_if_failed(register_rank_strategy(name, python_rank_strategy(std::move(strategy)),
                                               allow_override));
      },
      py::arg("name"), py::arg("strategy"), py::arg("allow_override") = false,
      "Registers strategy(settings, rank, world_size) -> bool under `name`.");
  py::class_<PySampler>(m, "Sampler", "A native trace sampler (see standard_sampler).")
      .def_property_readonly("description",
                             [](const PySampler& s) { return s.sampler->description(); });
  m.def(
      "standard_sampler",
      [](const std::string& kind, double ratio) {
        auto parsed = parse_sampler_kind(kind);
        if (!parsed) {
          throw py::value_error("Unknown sampler '" + kind +
                                "'; accepted: " + std::string(kAcceptedSamplers));
        }
        return PySampler{make_standard_sampler(*parsed, ratio)};
      },
      py::arg("kind"), py::arg("ratio") = 1.0,
      "One of OpenTelemetry's six standard samplers (OTEL_TRACES_SAMPLER names).");
  m.def(
      "rank_aware_sampler",
      [](int rank, int world_size, double rate, std::optional<PySampler> delegate) {
        RankInfo info = value_or_raise(RankInfo::make(rank, world_size));
        return PySampler{
            std::make_shared<RankAwareSampler>(info, rate, delegate ? delegate->sampler : nullptr)};
      },
      py::arg("rank"), py::arg("world_size"), py::arg("rate"), py::arg("delegate") = py::none(),
      "Keeps or drops this whole rank (the `sampled` strategy's test at `rate`); a kept rank "
      "asks `delegate` (default parentbased_always_on).");
  m.def(
      "register_sampling_strategy",
      [](const std::string& name, py::function factory, bool allow_override) {
        raise_if_failed(register_sampling_strategy(
            name, python_sampling_factory(std::move(factory)), allow_override));
      },
      py::arg("name"), py::arg("factory"), py::arg("allow_override") = false,
      "Registers factory(settings, rank, world_size, default_sampler) -> Sampler under `name`, "
      "selected by P_SAMPLING_STRATEGY; called once per setup.");
  m.def("unregister_sampling_strategy",
        [](const std::string& name) { raise_if_failed(unregister_sampling_strategy(name)); });
  m.def("registered_sampling_strategies", &registered_sampling_strategies);
  m.def(
      "extract",
      [](const Carrier& carrier) -> py::object {
        opentelemetry::context::Context context =
            extract_context(carrier, opentelemetry::context::Context{});
        auto span = opentelemetry::trace::GetSpan(context);
        opentelemetry::trace::SpanContext remote = span->GetContext();
        if (!remote.IsValid()) return py::none();
        py::dict result;
        result["trace_id"] = hex_id(remote.trace_id());
        result["span_id"] = hex_id(remote.span_id());
        result["sampled"] = remote.IsSampled();
        result["remote"] = remote.IsRemote();
        return result;
      },
      py::arg("carrier"),
      "The span context of a W3C carrier (trace_id, span_id, sampled, remote), or None.");
  m.def("unregister_rank_strategy",
        [](const std::string& name) { raise_if_failed(unregister_rank_strategy(name)); });
  m.def("registered_rank_strategies", &registered_rank_strategies);

  m.def(
      "inject",
      []() {
        Carrier carrier;
        inject_context(carrier);
        return carrier;
      },
      "The current span context as W3C headers (traceparent, tracestate, baggage).");
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

  add_training_bindings(m);
  if (!add_span_types(m.ptr()) || !add_span_object_type(m.ptr())) throw py::error_already_set();
}
