// Rank strategies from Python (see bindings.hpp): StrategySettings and the registry of strategies
// that decide whether a rank exports. A Python strategy's exception during setup is kept and
// raised again once setup returned (setup_bindings.cpp); a strategy runs with the GIL.
#include <string>
#include <utility>

#include "bindings.hpp"
#include "lens/rank_info.hpp"
#include "lens/strategies.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// Where setup keeps a rank strategy's exception (keep_strategy_errors_in); null outside setup.
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

}  // namespace

void keep_strategy_errors_in(PendingStrategyError* pending) { g_pending_strategy_error = pending; }

void add_rank_strategy_bindings(py::module_& m) {
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
  m.def("unregister_rank_strategy",
        [](const std::string& name) { raise_if_failed(unregister_rank_strategy(name)); });
  m.def("registered_rank_strategies", &registered_rank_strategies);
}

}  // namespace lens::python
