// Bound counters and histograms (see lens/metrics.hpp, docs/metrics.md "Bound instruments").
//
// An instrument ("core") owns its series (one per attribute set); a series owns a SlotPool with
// one slot per recording thread. Counters reach the SDK through an observable counter whose
// callback sums the slots. Histograms cannot be handed to the SDK pre-aggregated (1.19 has no
// such API, and replaying values would not be exact), so each gets an observable gauge that never
// observes anything: its callback runs inside every collection of the meter's provider, and when
// that collection is one of collect_with_bound_instruments() the histogram drains its slots and
// leaves finished MetricData in the collection, merged into the ResourceMetrics before they
// reach the reader's callback.
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/metrics/observer_result.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/metrics/meter.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "core/fork_generation.hpp"
#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"
#include "metrics/bound_attributes.hpp"
#include "metrics/bound_slots.hpp"
#include "metrics/histogram_views.hpp"

namespace lens::metrics {

namespace api = opentelemetry::metrics;
namespace nostd = opentelemetry::nostd;
namespace sdkmetrics = opentelemetry::sdk::metrics;
using Scope = opentelemetry::sdk::instrumentationscope::InstrumentationScope;

namespace detail {
// Internal types are not in an anonymous namespace: CounterCore and HistogramCore, declared in
// the public header, hold them.

// Attribute sets per instrument, the overflow series included: below the SDK's own limit, so
// that the observable counters never reach its overflow series.
constexpr std::size_t kMaxSeries = 1998;
constexpr const char* kOverflowKey = "otel.metric.overflow";

std::atomic<std::uint64_t> g_next_core_id{1};

struct SeriesData {
  Attributes attributes;
  ApiAttributes api;    // views into `attributes`
  FlatAttributes flat;  // views into `attributes`
  std::shared_ptr<SlotPool> pool;
};

inline bool inherited(std::uint64_t generation) noexcept {
  return generation != core::fork_generation();
}

// The series of one instrument, created on first bind of each attribute set.
template <class Series>
struct SeriesSet {
  std::uint64_t id = g_next_core_id.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t generation = (core::ensure_fork_handler(), core::fork_generation());
  std::mutex mutex;
  std::map<Attributes, std::unique_ptr<Series>, std::less<>> by_set;  // guarded by mutex
  std::vector<Series*> in_order;                                      // guarded by mutex

  std::vector<Series*> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return in_order;
  }

  // Null in a forked child (the mutex may have been held by a parent thread).
  template <class Make>
  Series* bind(const Attributes& attributes, Make&& make) {
    if (inherited(generation)) return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = by_set.find(attributes);
    if (it != by_set.end()) return it->second.get();
    if (by_set.size() + 1 >= kMaxSeries) {
      const Attributes overflow{{kOverflowKey, true}};
      it = by_set.find(overflow);
      if (it != by_set.end()) return it->second.get();
      return add(overflow, make);
    }
    return add(attributes, make);
  }

  template <class Make>
  Series* add(const Attributes& attributes, Make& make) {
    std::unique_ptr<Series> series = make(attributes);
    Series* raw = series.get();
    in_order.reserve(in_order.size() + 1);
    by_set.emplace(attributes, std::move(series));
    in_order.push_back(raw);
    return raw;
  }

  // In a forked child nothing of the parent's is destroyed: leaked instead.
  void leak_if_inherited() noexcept {
    if (!inherited(generation)) return;
    for (auto& [key, series] : by_set) static_cast<void>(series.release());
  }
};

template <class Series>
void fill_series_data(Series& series, const Attributes& attributes, SlotPool::Make make,
                      SlotPool::Destroy destroy, const void* context) {
  series.id = next_series_id();
  series.data.attributes = attributes;
  series.data.api = api_attributes(series.data.attributes);
  series.data.flat = flat_attributes(series.data.attributes);
  series.data.pool = std::make_shared<SlotPool>(series.id, make, destroy, context);
}

// Per-thread cache of attribute lists already bound: (instrument id, hash) -> series. Ids are
// never reused, so an entry of a destroyed instrument never matches.
// The entry also keeps the thread's slot of the series, saving the slot table look-up.
struct LookupEntry {
  std::uint64_t core_id;
  std::uint64_t hash;
  void* series;
  void* slot;
};
constexpr std::size_t kLookupEntries = 64;
thread_local LookupEntry tl_lookup[kLookupEntries];

inline std::uint64_t spread(std::uint64_t x) noexcept {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 29);
}

void forget_thread_lookups() noexcept {
  for (LookupEntry& entry : tl_lookup) entry = LookupEntry{};
}

template <class Series>
struct Found {
  Series* series = nullptr;
  void* slot = nullptr;  // the thread's own slot, when it has one
};

template <class Series, class Core>
Found<Series> lookup(Core& core, AttributeList list) noexcept {
  const std::uint64_t hash = hash_of(list);
  LookupEntry& entry = tl_lookup[(hash ^ spread(core.series.id)) % kLookupEntries];
  if (entry.core_id == core.series.id && entry.hash == hash) {
    auto* series = static_cast<Series*>(entry.series);
    if (same_set(series->data.flat, list)) {
      if (entry.slot == nullptr) entry.slot = cached_slot(*series);
      return {series, entry.slot};
    }
  }
  try {
    Series* series = core.bind(to_attributes(list));
    if (series == nullptr) return {};
    entry = LookupEntry{core.series.id, hash, series, cached_slot(*series)};
    return {series, entry.slot};
  } catch (...) {
    return {};  // out of memory: the measurement is dropped
  }
}

// --- counters --------------------------------------------------------------------------------

template <class T>
struct CounterSeries : SeriesBase {
  SeriesData data;
};

template <class T>
void* make_counter_slot(const void*) {
  return new CounterSlot<T>();
}
template <class T>
void destroy_counter_slot(void* slot) noexcept {
  delete static_cast<CounterSlot<T>*>(slot);
}

template <class T>
T counter_total(SlotPool& pool) {
  T total{};
  pool.for_each([&total](void* slot) {
    total += static_cast<CounterSlot<T>*>(slot)->value.load(std::memory_order_relaxed);
  });
  return total;
}

template <class T>
void add_slow(SeriesBase& base, T value) noexcept {
  auto& series = static_cast<CounterSeries<T>&>(base);
  SlotPool& pool = *series.data.pool;
  if (void* slot = pool.thread_slot()) {
    add_to_own_slot(slot, value);
  } else if (pool.usable()) {
    static_cast<CounterSlot<T>*>(pool.shared_slot())
        ->value.fetch_add(value, std::memory_order_relaxed);
  }
}

// --- histograms ------------------------------------------------------------------------------

template <class T>
struct HistogramSeries : HistogramSeriesBase {
  SeriesData data;
  sdkmetrics::PointAttributes point;
};

template <class T>
struct Aggregate {
  std::uint64_t count = 0;
  HistogramSum<T> sum{};
  T min{};
  T max{};
  std::vector<std::uint64_t> buckets;

  explicit Aggregate(std::size_t bucket_count) : buckets(bucket_count, 0) {}

  // Adds what `other` (an Aggregate or a HistogramSlot) counted, its buckets in `other_buckets`.
  template <class Other>
  void merge(const Other& other, const std::uint64_t* other_buckets) {
    if (other.count == 0) return;
    if (count == 0) {
      min = other.min;
      max = other.max;
    } else {
      min = std::min(min, other.min);
      max = std::max(max, other.max);
    }
    count += other.count;
    sum += other.sum;
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other_buckets[i];
  }
  void merge(const Aggregate& other) { merge(other, other.buckets.data()); }
};

constexpr std::align_val_t kLine{64};

template <class T>
struct HistogramSlotContext {
  std::size_t bucket_count;
};

template <class T>
void* make_histogram_slot(const void* context) {
  const std::size_t buckets = static_cast<const HistogramSlotContext<T>*>(context)->bucket_count;
  const std::size_t bytes = (buckets * sizeof(std::uint64_t) + 63) / 64 * 64;
  void* memory = ::operator new(bytes, kLine);
  std::memset(memory, 0, bytes);
  auto* slot = new (std::nothrow) HistogramSlot<T>();
  if (slot == nullptr) {
    ::operator delete(memory, kLine);
    throw std::bad_alloc();
  }
  slot->buckets = static_cast<std::uint64_t*>(memory);
  return slot;
}
template <class T>
void destroy_histogram_slot(void* slot) noexcept {
  auto* s = static_cast<HistogramSlot<T>*>(slot);
  ::operator delete(s->buckets, kLine);
  delete s;
}

// Takes what a slot holds and leaves it empty.
template <class T>
void drain(void* raw, Aggregate<T>& into) {
  auto& slot = *static_cast<HistogramSlot<T>*>(raw);
  while (slot.busy.exchange(true, std::memory_order_acquire)) {
    while (slot.busy.load(std::memory_order_relaxed)) {
    }
  }
  if (slot.count != 0) {
    into.merge(slot, slot.buckets);
    std::fill_n(slot.buckets, into.buckets.size(), 0);
    slot.count = 0;
    slot.sum = {};
  }
  slot.busy.store(false, std::memory_order_release);
}

template <class T>
void record_slow(HistogramSeriesBase& base, T value) noexcept {
  auto& series = static_cast<HistogramSeries<T>&>(base);
  SlotPool& pool = *series.data.pool;
  void* slot = pool.thread_slot();
  if (slot == nullptr) {
    if (!pool.usable()) return;
    slot = pool.shared_slot();  // its lock makes several writers safe
  }
  histogram_put(*static_cast<HistogramSlot<T>*>(slot), value,
                bucket_of(series, static_cast<double>(value)));
}

// --- collection context ----------------------------------------------------------------------

struct Collection {
  const void* reader = nullptr;
  sdkmetrics::AggregationTemporality temporality = sdkmetrics::AggregationTemporality::kCumulative;
  std::vector<std::pair<const Scope*, sdkmetrics::MetricData>> pending;
};

// The collection of collect_with_bound_instruments() running on this thread, if any.
thread_local Collection* tl_collection = nullptr;

struct HistogramCoreBase {
  virtual ~HistogramCoreBase() = default;
  virtual void collect(Collection& collection) noexcept = 0;
  virtual void forget(const void* reader) noexcept = 0;
};

// Live histograms, for forget_bound_reader().
struct HistogramRegistry {
  std::mutex mutex;
  std::set<HistogramCoreBase*> cores;
};
HistogramRegistry& histogram_registry() {
  static auto* instance = [] {
    auto* made = new HistogramRegistry();  // leaked: usable until the very end
    // Held across fork(), so that a child (which may make histograms of its own after a new
    // setup) never inherits it locked.
    pthread_atfork([] { histogram_registry().mutex.lock(); },
                   [] { histogram_registry().mutex.unlock(); },
                   [] { histogram_registry().mutex.unlock(); });
    return made;
  }();
  return *instance;
}

void anchor_callback(api::ObserverResult, void* state) noexcept {
  if (tl_collection != nullptr) static_cast<HistogramCoreBase*>(state)->collect(*tl_collection);
}

// Adds the bound histograms' data to the SDK's: under the scope of the meter each was made on
// (a ScopeMetrics is added when the SDK had nothing for it), one MetricData per name.
void merge_into(Collection& collection, sdkmetrics::ResourceMetrics& data) {
  std::map<std::pair<const Scope*, std::string>, std::pair<std::size_t, std::size_t>> added;
  for (auto& [scope, metric] : collection.pending) {
    const auto key = std::make_pair(scope, metric.instrument_descriptor.name_);
    auto it = added.find(key);
    if (it != added.end()) {
      auto& into = data.scope_metric_data_[it->second.first].metric_data_[it->second.second];
      for (auto& point : metric.point_data_attr_) into.point_data_attr_.push_back(std::move(point));
      if (metric.start_ts.time_since_epoch() < into.start_ts.time_since_epoch()) {
        into.start_ts = metric.start_ts;
      }
      continue;
    }
    std::size_t s = 0;
    while (s < data.scope_metric_data_.size() && data.scope_metric_data_[s].scope_ != scope) ++s;
    if (s == data.scope_metric_data_.size()) {
      data.scope_metric_data_.emplace_back();
      data.scope_metric_data_.back().scope_ = scope;
    }
    auto& metrics = data.scope_metric_data_[s].metric_data_;
    metrics.push_back(std::move(metric));
    added.emplace(key, std::make_pair(s, metrics.size() - 1));
  }
}

template <class T>
struct CounterCore {
  SeriesSet<CounterSeries<T>> series;
  // Heap-held so that a forked child can leave the parent's instrument alone (leak it).
  nostd::shared_ptr<api::ObservableInstrument>* instrument = nullptr;

  CounterSeries<T>* bind(const Attributes& attributes) {
    return series.bind(attributes, [](const Attributes& a) {
      auto s = std::make_unique<CounterSeries<T>>();
      fill_series_data(*s, a, &make_counter_slot<T>, &destroy_counter_slot<T>, nullptr);
      return s;
    });
  }

  static void observe(api::ObserverResult result, void* state) noexcept {
    auto* core = static_cast<CounterCore*>(state);
    using Observed = std::conditional_t<std::is_same_v<T, double>, double, std::int64_t>;
    using Observer = nostd::shared_ptr<api::ObserverResultT<Observed>>;
    if (!nostd::holds_alternative<Observer>(result)) return;
    Observer& observer = nostd::get<Observer>(result);
    try {
      for (CounterSeries<T>* s : core->series.snapshot()) {
        const T total = counter_total<T>(*s->data.pool);
        observer->Observe(
            static_cast<Observed>(total),
            opentelemetry::common::KeyValueIterableView<decltype(s->data.api.key_values)>(
                s->data.api.key_values));
      }
    } catch (...) {
      // Out of memory during a collection: the totals are reported at the next one.
    }
  }

  ~CounterCore() {
    if (instrument == nullptr) return;
    if (inherited(series.generation)) {
      series.leak_if_inherited();
      return;
    }
    // The SDK holds its registry lock while calling back: no callback runs after this.
    (*instrument)->RemoveCallback(&CounterCore::observe, this);
    delete instrument;
  }
};

template <class T>
struct HistogramCore final : HistogramCoreBase {
  SeriesSet<HistogramSeries<T>> series;
  std::string name;
  std::string description;
  std::string unit;
  std::vector<double> bounds;
  HistogramSlotContext<T> slot_context{};
  const Scope* scope = nullptr;
  opentelemetry::common::SystemTimestamp created{std::chrono::system_clock::now()};
  nostd::shared_ptr<api::ObservableInstrument>* instrument = nullptr;

  struct ReaderState {
    std::vector<Aggregate<T>> unreported;
    opentelemetry::common::SystemTimestamp last_end;
  };
  std::mutex collect_mutex;
  std::vector<Aggregate<T>> totals;            // guarded by collect_mutex
  std::map<const void*, ReaderState> readers;  // delta readers; guarded by collect_mutex

  HistogramSeries<T>* bind(const Attributes& attributes) {
    return series.bind(attributes, [this](const Attributes& a) {
      auto s = std::make_unique<HistogramSeries<T>>();
      s->bounds = bounds.data();
      s->bound_count = bounds.size();
      fill_series_data(*s, a, &make_histogram_slot<T>, &destroy_histogram_slot<T>, &slot_context);
      s->point = point_attributes(s->data.api);
      return s;
    });
  }

  sdkmetrics::PointDataAttributes point_of(const HistogramSeries<T>& s, const Aggregate<T>& a) {
    sdkmetrics::HistogramPointData point;
    point.boundaries_ = bounds;
    point.counts_ = a.buckets;
    point.count_ = a.count;
    point.sum_ = a.sum;
    point.min_ = static_cast<HistogramSum<T>>(a.min);
    point.max_ = static_cast<HistogramSum<T>>(a.max);
    point.record_min_max_ = true;
    sdkmetrics::PointDataAttributes out;
    out.attributes = s.point;
    out.point_data = std::move(point);
    return out;
  }

  void collect(Collection& collection) noexcept override {
    if (inherited(series.generation)) return;
    try {
      const std::vector<HistogramSeries<T>*> list = series.snapshot();
      const std::size_t buckets = bounds.size() + 1;
      std::lock_guard<std::mutex> lock(collect_mutex);
      totals.resize(list.size(), Aggregate<T>(buckets));
      for (auto& [reader, state] : readers) {
        state.unreported.resize(list.size(), Aggregate<T>(buckets));
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        Aggregate<T> drained(buckets);
        list[i]->data.pool->for_each([&drained](void* slot) { drain<T>(slot, drained); });
        if (drained.count == 0) continue;
        totals[i].merge(drained);
        for (auto& [reader, state] : readers) state.unreported[i].merge(drained);
      }
      const opentelemetry::common::SystemTimestamp now(std::chrono::system_clock::now());
      sdkmetrics::MetricData metric;
      metric.instrument_descriptor = sdkmetrics::InstrumentDescriptor{
          name, description, unit, sdkmetrics::InstrumentType::kHistogram,
          std::is_same_v<T, double> ? sdkmetrics::InstrumentValueType::kDouble
                                    : sdkmetrics::InstrumentValueType::kLong};
      metric.aggregation_temporality = collection.temporality;
      metric.end_ts = now;
      if (collection.temporality == sdkmetrics::AggregationTemporality::kCumulative) {
        metric.start_ts = created;
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (totals[i].count != 0)
            metric.point_data_attr_.push_back(point_of(*list[i], totals[i]));
        }
      } else {
        auto it = readers.find(collection.reader);
        if (it == readers.end()) {
          // A reader's first collection: everything since the instrument was made.
          it = readers.emplace(collection.reader, ReaderState{totals, created}).first;
        }
        ReaderState& state = it->second;
        metric.start_ts = state.last_end;
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (state.unreported[i].count == 0) continue;
          metric.point_data_attr_.push_back(point_of(*list[i], state.unreported[i]));
          state.unreported[i] = Aggregate<T>(buckets);
        }
        state.last_end = now;
      }
      if (!metric.point_data_attr_.empty()) {
        collection.pending.emplace_back(scope, std::move(metric));
      }
    } catch (...) {
      // Out of memory: what was drained stays in the totals and is reported next time.
    }
  }

  void forget(const void* reader) noexcept override {
    std::lock_guard<std::mutex> lock(collect_mutex);
    readers.erase(reader);
  }

  ~HistogramCore() override {
    if (instrument == nullptr) return;
    if (inherited(series.generation)) {
      series.leak_if_inherited();
      return;
    }
    (*instrument)->RemoveCallback(&anchor_callback, static_cast<HistogramCoreBase*>(this));
    delete instrument;
    HistogramRegistry& registry = histogram_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.cores.erase(this);
  }
};

void counter_add_slow(SeriesBase& series, std::uint64_t value) noexcept {
  add_slow<std::uint64_t>(series, value);
}
void counter_add_slow(SeriesBase& series, double value) noexcept {
  add_slow<double>(series, value);
}
void histogram_record_slow(HistogramSeriesBase& series, std::uint64_t value) noexcept {
  record_slow<std::uint64_t>(series, value);
}
void histogram_record_slow(HistogramSeriesBase& series, double value) noexcept {
  record_slow<double>(series, value);
}

}  // namespace detail

namespace {

bool noop(const nostd::shared_ptr<api::ObservableInstrument>& instrument) {
  return instrument == nullptr ||
         dynamic_cast<const api::NoopObservableInstrument*>(instrument.get()) != nullptr;
}

// Counter<T>::bind and Histogram<T>::bind: the bound instrument's core and series stay null when
// there is no core (no-op meter) or the series cannot be made.
template <class Core, class Series>
void bind_series(const std::shared_ptr<Core>& core, const Attributes& attributes,
                 std::shared_ptr<Core>& bound_core, Series*& bound_series) {
  if (core == nullptr) return;
  bound_series = core->bind(attributes);
  if (bound_series != nullptr) bound_core = core;
}

bool valid_boundaries(const std::vector<double>& bounds) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return false;
    if (i > 0 && !(bounds[i - 1] < bounds[i])) return false;
  }
  return true;
}

}  // namespace

template <class T>
BoundCounter<T> Counter<T>::bind(const Attributes& attributes) const {
  BoundCounter<T> bound;
  bind_series(core_, attributes, bound.core_, bound.series_);
  return bound;
}

template <class T>
void Counter<T>::add(T value, AttributeList attributes) noexcept {
  if (core_ == nullptr || !detail::acceptable(value)) return;
  const auto found = detail::lookup<detail::CounterSeries<T>>(*core_, attributes);
  if (found.slot != nullptr) {
    detail::add_to_own_slot(found.slot, value);
  } else if (found.series != nullptr) {
    detail::counter_add_slow(*found.series, value);
  }
}

template <class T>
BoundHistogram<T> Histogram<T>::bind(const Attributes& attributes) const {
  BoundHistogram<T> bound;
  bind_series(core_, attributes, bound.core_, bound.series_);
  return bound;
}

template <class T>
void Histogram<T>::record(T value, AttributeList attributes) noexcept {
  if (core_ == nullptr || !detail::acceptable(value)) return;
  const auto found = detail::lookup<detail::HistogramSeries<T>>(*core_, attributes);
  if (found.slot != nullptr) {
    detail::histogram_put(*static_cast<detail::HistogramSlot<T>*>(found.slot), value,
                          detail::bucket_of(*found.series, static_cast<double>(value)));
  } else if (found.series != nullptr) {
    detail::histogram_record_slow(*found.series, value);
  }
}

template <class T>
Counter<T> make_counter(api::Meter& meter, std::string_view name, std::string_view description,
                        std::string_view unit) {
  Counter<T> counter;
  const nostd::string_view n(name.data(), name.size());
  const nostd::string_view d(description.data(), description.size());
  const nostd::string_view u(unit.data(), unit.size());
  nostd::shared_ptr<api::ObservableInstrument> instrument =
      std::is_same_v<T, double> ? meter.CreateDoubleObservableCounter(n, d, u)
                                : meter.CreateInt64ObservableCounter(n, d, u);
  if (noop(instrument)) return counter;  // no-op meter, or a name the SDK rejected
  auto core = std::make_shared<detail::CounterCore<T>>();
  core->instrument = new nostd::shared_ptr<api::ObservableInstrument>(std::move(instrument));
  (*core->instrument)->AddCallback(&detail::CounterCore<T>::observe, core.get());
  counter.core_ = std::move(core);
  return counter;
}

template <class T>
Histogram<T> make_histogram(api::Meter& meter, std::string_view name, std::string_view description,
                            std::string_view unit, std::vector<double> boundaries) {
  Histogram<T> histogram;
  auto* sdk_meter = dynamic_cast<sdkmetrics::Meter*>(&meter);
  if (sdk_meter == nullptr) return histogram;  // no-op meter
  // A view of the provider (SetupOverrides::metric_views) applies as to the SDK's histograms.
  HistogramView view =
      find_histogram_view(*sdk_meter, name, description, unit,
                          std::is_same_v<T, double> ? sdkmetrics::InstrumentValueType::kDouble
                                                    : sdkmetrics::InstrumentValueType::kLong);
  if (view.drop) return histogram;
  if (view.boundaries) boundaries = std::move(*view.boundaries);
  if (!valid_boundaries(boundaries)) {
    std::fprintf(stderr,
                 "lens: invalid histogram boundaries for %.*s (finite and strictly increasing "
                 "expected); the histogram records nothing\n",
                 static_cast<int>(name.size()), name.data());
    return histogram;
  }
  nostd::shared_ptr<api::ObservableInstrument> instrument = sdk_meter->CreateDoubleObservableGauge(
      nostd::string_view(name.data(), name.size()),
      nostd::string_view(description.data(), description.size()),
      nostd::string_view(unit.data(), unit.size()));
  if (noop(instrument)) return histogram;  // a name the SDK rejected (reported by it)
  auto core = std::make_shared<detail::HistogramCore<T>>();
  core->name = std::move(view.name);
  core->description = std::move(view.description);
  core->unit = std::string(unit);
  core->bounds = std::move(boundaries);
  core->slot_context.bucket_count = core->bounds.size() + 1;
  core->scope = sdk_meter->GetInstrumentationScope();
  {
    auto& registry = detail::histogram_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.cores.insert(core.get());
  }
  core->instrument = new nostd::shared_ptr<api::ObservableInstrument>(std::move(instrument));
  (*core->instrument)
      ->AddCallback(&detail::anchor_callback, static_cast<detail::HistogramCoreBase*>(core.get()));
  histogram.core_ = std::move(core);
  return histogram;
}

bool collect_with_bound_instruments(
    sdkmetrics::MetricReader& reader,
    nostd::function_ref<bool(sdkmetrics::ResourceMetrics&)> callback) noexcept {
  detail::Collection collection;
  collection.reader = &reader;
  collection.temporality = reader.GetAggregationTemporality(sdkmetrics::InstrumentType::kHistogram);
  detail::Collection* previous = detail::tl_collection;
  detail::tl_collection = &collection;
  const bool collected = reader.Collect([&](sdkmetrics::ResourceMetrics& data) {
    detail::tl_collection = previous;
    try {
      detail::merge_into(collection, data);
    } catch (...) {
      // Out of memory: this collection goes out without the bound histograms.
    }
    return callback(data);
  });
  detail::tl_collection = previous;
  return collected;
}

void forget_bound_reader(const sdkmetrics::MetricReader& reader) noexcept {
  auto& registry = detail::histogram_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (auto* core : registry.cores) core->forget(&reader);
}

template class Counter<std::uint64_t>;
template class Counter<double>;
template class Histogram<std::uint64_t>;
template class Histogram<double>;
template Counter<std::uint64_t> make_counter<std::uint64_t>(api::Meter&, std::string_view,
                                                            std::string_view, std::string_view);
template Counter<double> make_counter<double>(api::Meter&, std::string_view, std::string_view,
                                              std::string_view);
template Histogram<std::uint64_t> make_histogram<std::uint64_t>(api::Meter&, std::string_view,
                                                                std::string_view, std::string_view,
                                                                std::vector<double>);
template Histogram<double> make_histogram<double>(api::Meter&, std::string_view, std::string_view,
                                                  std::string_view, std::vector<double>);

}  // namespace lens::metrics
