// Self-metrics registration (see self_metrics.hpp).
#include "telemetry/self_metrics.hpp"

#include <opentelemetry/metrics/async_instruments.h>
#include <opentelemetry/metrics/observer_result.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lens::telemetry {

namespace api = opentelemetry::metrics;
namespace nostd = opentelemetry::nostd;

class SelfMetrics {
 public:
  enum class What { exported, failed, dropped, queue, limited, truncated };

  SelfMetrics(std::function<TelemetryStats()> stats, bool traces, bool logs)
      : stats_(std::move(stats)), traces_(traces), logs_(logs) {}
  ~SelfMetrics() {
    // The registry holds its lock while calling back: no callback runs after this.
    for (auto& [instrument, context] : registered_) {
      instrument->RemoveCallback(&SelfMetrics::observe, context.get());
    }
  }
  SelfMetrics(const SelfMetrics&) = delete;
  SelfMetrics& operator=(const SelfMetrics&) = delete;

  void add(nostd::shared_ptr<api::ObservableInstrument> instrument, What what) {
    if (instrument == nullptr) return;
    auto context = std::make_unique<Context>(Context{this, what});
    instrument->AddCallback(&SelfMetrics::observe, context.get());
    registered_.emplace_back(std::move(instrument), std::move(context));
  }

 private:
  struct Context {
    SelfMetrics* self;
    What what;
  };

  static void observe(api::ObserverResult result, void* state) noexcept {
    auto* context = static_cast<Context*>(state);
    using Observer = nostd::shared_ptr<api::ObserverResultT<std::int64_t>>;
    if (!nostd::holds_alternative<Observer>(result)) return;
    context->self->report(*nostd::get<Observer>(result), context->what);
  }

  void report(api::ObserverResultT<std::int64_t>& observer, What what) const noexcept {
    const TelemetryStats s = stats_();
    if (what == What::limited) {
      if (!traces_) return;
      for (const auto& [item, count] : {std::pair{"attribute", s.attributes_dropped},
                                        std::pair{"event", s.events_dropped},
                                        std::pair{"link", s.links_dropped}}) {
        observer.Observe(static_cast<std::int64_t>(count),
                         std::map<std::string, std::string>{{"item", item}});
      }
      return;
    }
    if (what == What::truncated) {
      if (traces_ || logs_) observer.Observe(static_cast<std::int64_t>(s.values_truncated));
      return;
    }
    struct Row {
      const char* signal;
      std::uint64_t exported, failed, dropped, queue;
      bool on;
    };
    auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
    const Row rows[] = {
        {"traces", s.spans_exported, s.spans_failed, s.spans_dropped,
         minus(s.spans_ended, s.spans_exported + s.spans_dropped), traces_},
        {"metrics", s.metric_points_exported, s.metric_points_failed, 0, 0, true},
        {"logs", s.log_records_exported, s.log_records_failed, s.log_records_dropped,
         minus(s.log_records_emitted, s.log_records_exported + s.log_records_dropped), logs_},
    };
    for (const Row& row : rows) {
      if (!row.on) continue;
      const std::uint64_t value = what == What::exported  ? row.exported
                                  : what == What::failed  ? row.failed
                                  : what == What::dropped ? row.dropped
                                                          : row.queue;
      const std::map<std::string, std::string> attributes{{"signal", row.signal}};
      observer.Observe(static_cast<std::int64_t>(value), attributes);
    }
  }

  std::function<TelemetryStats()> stats_;
  const bool traces_;
  const bool logs_;
  std::vector<std::pair<nostd::shared_ptr<api::ObservableInstrument>, std::unique_ptr<Context>>>
      registered_;
};

std::shared_ptr<SelfMetrics> register_self_metrics(api::Meter& meter,
                                                   std::function<TelemetryStats()> stats,
                                                   bool traces, bool logs) {
  auto self = std::make_shared<SelfMetrics>(std::move(stats), traces, logs);
  self->add(meter.CreateInt64ObservableCounter(
                "lens.exporter.exported", "Records exported successfully, per signal", "{record}"),
            SelfMetrics::What::exported);
  self->add(meter.CreateInt64ObservableCounter("lens.exporter.failed",
                                               "Records in failed exports, per signal", "{record}"),
            SelfMetrics::What::failed);
  self->add(meter.CreateInt64ObservableCounter(
                "lens.exporter.dropped",
                "Records lost without export (full queue, failed export), per signal", "{record}"),
            SelfMetrics::What::dropped);
  self->add(meter.CreateInt64ObservableGauge(
                "lens.queue.size", "Records accepted and not yet through an export, per signal",
                "{record}"),
            SelfMetrics::What::queue);
  self->add(meter.CreateInt64ObservableCounter(
                "lens.limits.dropped",
                "Span attributes, events and links dropped by the count limits, per item",
                "{item}"),
            SelfMetrics::What::limited);
  self->add(meter.CreateInt64ObservableCounter(
                "lens.limits.truncated_values",
                "Span and log attribute values cut to the length limits", "{value}"),
            SelfMetrics::What::truncated);
  return self;
}

}  // namespace lens::telemetry
