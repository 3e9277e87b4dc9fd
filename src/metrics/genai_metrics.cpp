// GenAI inference instruments (see lens/genai_metrics.hpp).
#include "lens/genai_metrics.hpp"

#include <opentelemetry/context/context.h>
#include <opentelemetry/metrics/sync_instruments.h>

#include <map>
#include <memory>

#include "lens/metrics.hpp"

namespace lens::metrics {
namespace {

namespace api = opentelemetry::metrics;
namespace nostd = opentelemetry::nostd;

struct InferenceInstruments {
  static constexpr const char* kDomain = "inference";
  nostd::unique_ptr<api::Histogram<double>> request_duration;
  nostd::unique_ptr<api::Histogram<std::uint64_t>> token_usage;

  static std::shared_ptr<InferenceInstruments> make(api::Meter& meter) {
    auto made = std::make_shared<InferenceInstruments>();
    made->request_duration = meter.CreateDoubleHistogram(
        "gen_ai.server.request.duration", "Generative AI server request duration", "s");
    made->token_usage = meter.CreateUInt64Histogram(
        "gen_ai.client.token.usage", "Number of input and output tokens used", "{token}");
    return made;
  }
};

}  // namespace

void record_inference_metrics(api::Meter& meter, const InferenceMetricValues& v) noexcept {
  try {
    auto instruments = instruments_for<InferenceInstruments>(meter);
    if (instruments == nullptr) return;
    std::map<std::string, std::string> attributes{{"gen_ai.operation.name", v.operation_name},
                                                  {"gen_ai.provider.name", v.provider_name}};
    if (!v.model.empty()) attributes.emplace("gen_ai.request.model", v.model);
    const opentelemetry::context::Context context;
    if (v.request_duration_s && instruments->request_duration) {
      instruments->request_duration->Record(*v.request_duration_s, attributes, context);
    }
    for (const auto& [tokens, type] :
         {std::pair{v.input_tokens, "input"}, std::pair{v.output_tokens, "output"}}) {
      if (!tokens || *tokens < 0 || !instruments->token_usage) continue;
      auto with_type = attributes;
      with_type.emplace("gen_ai.token.type", type);
      instruments->token_usage->Record(static_cast<std::uint64_t>(*tokens), with_type, context);
    }
  } catch (...) {
    // Out of memory: these values are lost, the server is not disturbed.
  }
}

}  // namespace lens::metrics
