// The synchronous gauge front (see lens/metrics.hpp): the last value per attribute set, kept
// under a mutex and reported by an observable gauge's callback at each collection.
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/metrics/observer_result.h>

#include <map>
#include <mutex>
#include <utility>

#include "lens/metrics.hpp"
#include "metrics/bound_attributes.hpp"

namespace lens::metrics {

namespace api = opentelemetry::metrics;
namespace nostd = opentelemetry::nostd;

namespace detail {

template <class T>
struct GaugeState {
  std::mutex mutex;
  std::map<Attributes, T> values;
  nostd::shared_ptr<api::ObservableInstrument> instrument;

  static void observe(api::ObserverResult result, void* self) noexcept;

  ~GaugeState() {
    // The registry holds its lock while calling back, so no callback runs after this returns.
    if (instrument != nullptr) instrument->RemoveCallback(&GaugeState::observe, this);
  }
};

template <class T>
void GaugeState<T>::observe(api::ObserverResult result, void* self) noexcept {
  auto* state = static_cast<GaugeState*>(self);
  using Observer = nostd::shared_ptr<api::ObserverResultT<T>>;
  if (!nostd::holds_alternative<Observer>(result)) return;
  Observer& observer = nostd::get<Observer>(result);
  try {
    std::lock_guard<std::mutex> lock(state->mutex);
    for (const auto& [attributes, value] : state->values) {
      const ApiAttributes api = api_attributes(attributes);
      observer->Observe(
          value,
          opentelemetry::common::KeyValueIterableView<decltype(api.key_values)>(api.key_values));
    }
  } catch (...) {
    // Out of memory during a collection: this gauge reports nothing this time.
  }
}

}  // namespace detail

template <class T>
void Gauge<T>::record(T value, const Attributes& attributes) noexcept {
  if (state_ == nullptr) return;
  try {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->values.insert_or_assign(attributes, value);
  } catch (...) {
    // Out of memory: the value is lost, the caller is not disturbed.
  }
}

template <class T>
Gauge<T> make_gauge(api::Meter& meter, std::string_view name, std::string_view description,
                    std::string_view unit) {
  Gauge<T> gauge;
  auto state = std::make_shared<detail::GaugeState<T>>();
  const nostd::string_view n(name.data(), name.size());
  const nostd::string_view d(description.data(), description.size());
  const nostd::string_view u(unit.data(), unit.size());
  if constexpr (std::is_same_v<T, double>) {
    state->instrument = meter.CreateDoubleObservableGauge(n, d, u);
  } else {
    state->instrument = meter.CreateInt64ObservableGauge(n, d, u);
  }
  if (state->instrument == nullptr) return gauge;
  state->instrument->AddCallback(&detail::GaugeState<T>::observe, state.get());
  gauge.state_ = std::move(state);
  return gauge;
}

template class Gauge<double>;
template class Gauge<std::int64_t>;
template Gauge<double> make_gauge<double>(api::Meter&, std::string_view, std::string_view,
                                          std::string_view);
template Gauge<std::int64_t> make_gauge<std::int64_t>(api::Meter&, std::string_view,
                                                      std::string_view, std::string_view);

}  // namespace lens::metrics
