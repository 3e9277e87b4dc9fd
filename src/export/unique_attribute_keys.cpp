// Unique attribute keys in OTLP requests (see unique_attribute_keys.hpp).
#include "export/unique_attribute_keys.hpp"

#include <string_view>
#include <unordered_map>
#include <vector>

namespace lens::exporters {
namespace {

namespace proto = opentelemetry::proto;

// Lists up to this long are checked for a repeated key by pairs, without allocating.
constexpr int kPairwiseLimit = 16;

// Index of the first attribute with each attribute's key (itself when it is the first).
std::vector<int> first_of_each_key(const AttributeList& list) {
  const int n = list.size();
  std::vector<int> first(static_cast<std::size_t>(n));
  std::unordered_map<std::string_view, int> seen;
  seen.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) first[i] = seen.try_emplace(list.Get(i).key(), i).first->second;
  return first;
}

template <typename Message>
void fix(Message& message) {
  keep_last_value_per_key(message.mutable_attributes());
}

template <typename Points>
void fix_points(Points* points) {
  for (auto& point : *points) {
    keep_last_value_per_key(point.mutable_attributes());
    for (auto& exemplar : *point.mutable_exemplars()) {
      keep_last_value_per_key(exemplar.mutable_filtered_attributes());
    }
  }
}

// Every resource and scope of a request, and each scope's items with fix_items(scope).
template <typename Resources, typename ScopesOf, typename FixItems>
void fix_request(Resources* resources, ScopesOf scopes_of, FixItems fix_items) {
  for (auto& resource : *resources) {
    fix(*resource.mutable_resource());
    for (auto& scope : *scopes_of(resource)) {
      fix(*scope.mutable_scope());
      fix_items(scope);
    }
  }
}

// Whether any key of a short list appears twice (no allocation: the common case, on every
// attribute list of every request, is a handful of unique keys).
bool has_repeated_key_pairwise(const AttributeList& list) {
  const int n = list.size();
  for (int i = 1; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (list.Get(j).key() == list.Get(i).key()) return true;
    }
  }
  return false;
}

}  // namespace

void keep_last_value_per_key(AttributeList* attributes) {
  const int n = attributes->size();
  if (n < 2) return;
  if (n <= kPairwiseLimit && !has_repeated_key_pairwise(*attributes)) return;
  const std::vector<int> first = first_of_each_key(*attributes);
  bool repeated = false;
  for (int i = 0; i < n && !repeated; ++i) repeated = first[i] != i;
  if (!repeated) return;
  // Each later value moves to its key's first place (so the last one ends there)...
  for (int i = 0; i < n; ++i) {
    if (first[i] != i) {
      attributes->Mutable(first[i])->mutable_value()->Swap(attributes->Mutable(i)->mutable_value());
    }
  }
  // ...then the repeats, now holding stale values, are removed, order otherwise kept.
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (first[i] != i) continue;
    if (kept != i) attributes->SwapElements(kept, i);
    ++kept;
  }
  attributes->DeleteSubrange(kept, n - kept);
}

void keep_last_value_per_key(proto::collector::trace::v1::ExportTraceServiceRequest* request) {
  fix_request(
      request->mutable_resource_spans(), [](auto& r) { return r.mutable_scope_spans(); },
      [](auto& scope) {
        for (auto& span : *scope.mutable_spans()) {
          fix(span);
          for (auto& event : *span.mutable_events()) fix(event);
          for (auto& link : *span.mutable_links()) fix(link);
        }
      });
}

void keep_last_value_per_key(proto::collector::logs::v1::ExportLogsServiceRequest* request) {
  fix_request(
      request->mutable_resource_logs(), [](auto& r) { return r.mutable_scope_logs(); },
      [](auto& scope) {
        for (auto& record : *scope.mutable_log_records()) fix(record);
      });
}

void keep_last_value_per_key(proto::collector::metrics::v1::ExportMetricsServiceRequest* request) {
  fix_request(
      request->mutable_resource_metrics(), [](auto& r) { return r.mutable_scope_metrics(); },
      [](auto& scope) {
        for (auto& metric : *scope.mutable_metrics()) {
          if (metric.has_gauge()) fix_points(metric.mutable_gauge()->mutable_data_points());
          if (metric.has_sum()) fix_points(metric.mutable_sum()->mutable_data_points());
          if (metric.has_histogram()) fix_points(metric.mutable_histogram()->mutable_data_points());
          if (metric.has_exponential_histogram()) {
            fix_points(metric.mutable_exponential_histogram()->mutable_data_points());
          }
          if (metric.has_summary()) {
            for (auto& point : *metric.mutable_summary()->mutable_data_points()) fix(point);
          }
        }
      });
}

}  // namespace lens::exporters
