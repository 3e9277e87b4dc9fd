// Trace samplers from Python (see bindings.hpp): OpenTelemetry's standard samplers, the rank-aware
// sampler and the registry of sampling strategies, whose Python factories run once per setup with
// the GIL. A bad sampler name raises ValueError naming the accepted ones.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "lens/rank_info.hpp"
#include "lens/sampling.hpp"
#include "lens/strategies.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

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

}  // namespace

void add_sampler_bindings(py::module_& m) {
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
}

}  // namespace lens::python
