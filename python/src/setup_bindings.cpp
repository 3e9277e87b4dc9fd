// setup_telemetry and TelemetryHandle's lifecycle (see bindings.hpp). Bad configuration raises
// ValueError naming the variable; a rank strategy's Python exception is raised again once setup
// returned. Calls that wait (flush, shutdown) release the GIL.
#include <chrono>
#include <optional>
#include <utility>

#include "bindings.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/strategies.hpp"
#include "training_bindings.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// The launcher's rank and world size (torchrun, MPI, SLURM), each replaced by the one given.
RankInfo rank_info_of(std::optional<int> rank, std::optional<int> world_size) {
  if (rank.has_value() || world_size.has_value()) {
    RankInfo detected = value_or_raise(RankInfo::detect());
    return value_or_raise(
        RankInfo::make(rank.value_or(detected.rank), world_size.value_or(detected.world_size),
                       detected.local_rank, detected.local_world_size, detected.node_rank));
  }
  return value_or_raise(RankInfo::detect());
}

TelemetryHandle setup(Config config, std::optional<int> rank, std::optional<int> world_size,
                      const py::dict& resource_attributes, bool allow_reinit, py::object broadcast,
                      std::optional<bool> exporting) {
  RankInfo rank_info = rank_info_of(rank, world_size);
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
  keep_strategy_errors_in(&pending);
  Result<TelemetryHandle> handle = setup_telemetry(
      std::move(config), rank_info, to_attributes(resource_attributes), std::move(overrides));
  keep_strategy_errors_in(nullptr);
  if (pending.error) {
    if (handle.ok()) {
      py::gil_scoped_release release;
      (void)handle.value().shutdown(std::chrono::milliseconds(1000));
    }
    throw std::move(*pending.error);
  }
  return value_or_raise(std::move(handle));
}

// Whether `call` (a handle's call that may wait) returns an ok Status; the GIL is released
// meanwhile.
template <class Call>
bool succeeds_without_gil(Call&& call) {
  Status status;
  {
    py::gil_scoped_release release;
    status = call();
  }
  return status.ok();
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

}  // namespace

py::class_<TelemetryHandle> add_setup_bindings(py::module_& m) {
  py::class_<TelemetryHandle> handle(m, "TelemetryHandle", "What setup_telemetry returns.");
  handle.def("is_exporting", &TelemetryHandle::is_exporting)
      .def_property_readonly("run_id", &TelemetryHandle::run_id)
      .def_property_readonly("stats",
                             [](const TelemetryHandle& h) { return stats_dict(h.stats()); })
      .def(
          "force_flush",
          [](TelemetryHandle& h, int timeout_ms) {
            return succeeds_without_gil(
                [&] { return h.force_flush(std::chrono::milliseconds(timeout_ms)); });
          },
          py::arg("timeout_ms") = 5000, "Exports what finished so far; False on timeout.")
      .def(
          "shutdown",
          [](TelemetryHandle& h, int timeout_ms) {
            return succeeds_without_gil(
                [&] { return h.shutdown(std::chrono::milliseconds(timeout_ms)); });
          },
          py::arg("timeout_ms") = 5000,
          "Ends open spans (truncated), flushes and shuts down within the timeout; idempotent. "
          "False when something did not finish in time.");

  m.def("setup_telemetry", &setup, py::arg("config"), py::arg("rank") = py::none(),
        py::arg("world_size") = py::none(), py::arg("resource_attributes") = py::dict(),
        py::arg("allow_reinit") = false, py::arg("broadcast") = py::none(),
        py::arg("exporting") = py::none(),
        "Sets telemetry up for this process; raises ValueError naming the bad variable. rank and "
        "world_size default to the launcher's (torchrun, MPI, SLURM). broadcast(payload: bytes, "
        "root: int) -> bytes, a collective every rank calls, lets rank 0 share a generated run "
        "id (see lens.torch_broadcast).");
  return handle;
}

}  // namespace lens::python
