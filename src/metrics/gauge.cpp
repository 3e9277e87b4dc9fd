// The synchronous gauge front (see lens/metrics.hpp): the last value per attribute set, kept
// under a mutex and reported by an observable gauge's callback at each collection.
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/metrics/observer_result.h>

#include <map>
#include <mutex>
#include <utility>

#include "lens/metrics.hpp"

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

namespace {

using KeyValues = std::vector<std::pair<nostd::string_view, opentelemetry::common::AttributeValue>>;

// Views into `attributes` (which outlives the returned vector).
KeyValues key_values(const Attributes& attributes) {
  KeyValues out;
  out.reserve(attributes.size());
  for (const auto& [key, value] : attributes) {
    std::visit(
        [&out, &key = key](const auto& v) {  // a binding is not capturable in Clang < 16
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            out.emplace_back(key, nostd::string_view(v));
          } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
            out.emplace_back(key, nostd::span<const std::int64_t>(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, std::vector<double>>) {
            out.emplace_back(key, nostd::span<const double>(v.data(), v.size()));
          } else if constexpr (std::is_same_v<V, std::vector<bool>>) {
            // std::vector<bool> has no contiguous storage to point at: left out.
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            // Arrays of strings need string_view storage; left out like bool arrays.
          } else {
            out.emplace_back(key, v);
          }
        },
        value);
  }
  return out;
}

}  // namespace

template <class T>
void GaugeState<T>::observe(api::ObserverResult result, void* self) noexcept {
  auto* state = static_cast<GaugeState*>(self);
  using Observer = nostd::shared_ptr<api::ObserverResultT<T>>;
  if (!nostd::holds_alternative<Observer>(result)) return;
  Observer& observer = nostd::get<Observer>(result);
  try {
    std::lock_guard<std::mutex> lock(state->mutex);
    for (const auto& [attributes, value] : state->values) {
      const KeyValues kv = key_values(attributes);
      observer->Observe(value, opentelemetry::common::KeyValueIterableView<KeyValues>(kv));
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
