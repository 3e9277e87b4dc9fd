// The Megatron integration of megatron/ for Python (see bindings.hpp): its span groups, span
// vocabulary and catalogue, training resource attribute keys and training metrics. Entry points
// run with the GIL held; recording the metrics never raises.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "lens/megatron/config.hpp"
#include "lens/megatron/span_groups.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/megatron/training_metrics.hpp"
#include "lens/rank_info.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// None, or a value that is not a number (after setup nothing raises into training code).
std::optional<double> optional_double(const py::object& value) {
  if (value.is_none()) return std::nullopt;
  try {
    return value.cast<double>();
  } catch (const py::cast_error&) {
    return std::nullopt;
  }
}

}  // namespace

void add_megatron_bindings(py::module_& m) {
  m.def("megatron_register_span_groups", []() {
    if (Status status = megatron::register_span_groups(); !status.ok()) {
      throw py::value_error(status.message());
    }
  });
  m.def("megatron_span_groups", []() { return megatron::all_span_groups(); });
  m.def("megatron_span_group_presets", []() { return megatron::span_group_presets(); });
  m.def("megatron_span_catalogue", []() {
    std::vector<std::tuple<std::string, std::string, std::string, bool, std::vector<std::string>>>
        out;
    for (const megatron::spans::SpanDef& span : megatron::spans::catalogue()) {
      std::vector<std::string> keys(span.keys.begin(), span.keys.end());
      out.emplace_back(std::string(span.name), std::string(span.group), std::string(span.parent),
                       span.new_trace, std::move(keys));
    }
    return out;
  });
  m.def("megatron_training_resource_attribute_keys", []() {
    std::vector<std::string> keys;
    for (const auto& [key, value] :
         megatron::training_resource_attributes(megatron::TrainingArgs{}, RankInfo{})) {
      keys.push_back(key);
    }
    return keys;
  });
  m.def("megatron_training_metric_names", []() {
    return std::vector<std::string>{
        std::string(megatron::kStepDurationMs),   std::string(megatron::kLoss),
        std::string(megatron::kThroughputTflops), std::string(megatron::kTokensPerSec),
        std::string(megatron::kGradNorm),         std::string(megatron::kSkippedIters),
        std::string(megatron::kLearningRate),     std::string(megatron::kMemoryAllocatedGb)};
  });
  m.def(
      "megatron_record_training_metrics",
      [](TelemetryHandle& handle, py::object step_duration_ms, py::object loss,
         py::object throughput_tflops, py::object tokens_per_sec, py::object grad_norm,
         py::object skipped_iters, py::object learning_rate, py::object memory_allocated_gb) {
        megatron::TrainingMetricValues values;
        values.step_duration_ms = optional_double(step_duration_ms);
        values.loss = optional_double(loss);
        values.throughput_tflops = optional_double(throughput_tflops);
        values.tokens_per_sec = optional_double(tokens_per_sec);
        values.grad_norm = optional_double(grad_norm);
        if (std::optional<double> skipped = optional_double(skipped_iters)) {
          values.skipped_iters = static_cast<std::int64_t>(*skipped);
        }
        values.learning_rate = optional_double(learning_rate);
        values.memory_allocated_gb = optional_double(memory_allocated_gb);
        megatron::record_training_metrics(*handle.meter(), values);
      },
      py::arg("handle"), py::arg("step_duration_ms") = py::none(), py::arg("loss") = py::none(),
      py::arg("throughput_tflops") = py::none(), py::arg("tokens_per_sec") = py::none(),
      py::arg("grad_norm") = py::none(), py::arg("skipped_iters") = py::none(),
      py::arg("learning_rate") = py::none(), py::arg("memory_allocated_gb") = py::none(),
      "Records the megatron.training.* instruments (docs/metrics.md, \"Training and GenAI "
      "instruments\"); None values are skipped.");
}

}  // namespace lens::python
