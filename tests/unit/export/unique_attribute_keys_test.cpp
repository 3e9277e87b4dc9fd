// OTLP attribute lists leave lens with unique keys: the last value at the first key's place,
// in short lists (pairwise) and long ones (hashed), in every list of the three requests.
#include "export/unique_attribute_keys.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace lens::exporters {
namespace {

namespace proto = opentelemetry::proto;

void add(AttributeList* list, const std::string& key, std::int64_t value) {
  auto* kv = list->Add();
  kv->set_key(key);
  kv->mutable_value()->set_int_value(value);
}

std::vector<std::pair<std::string, std::int64_t>> contents(const AttributeList& list) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& kv : list) out.emplace_back(kv.key(), kv.value().int_value());
  return out;
}

using Pairs = std::vector<std::pair<std::string, std::int64_t>>;

TEST(UniqueAttributeKeys, TheLastValueTakesTheFirstPlace) {
  AttributeList list;
  add(&list, "a", 1);
  add(&list, "b", 2);
  add(&list, "a", 3);
  add(&list, "c", 4);
  add(&list, "b", 5);
  add(&list, "a", 6);
  keep_last_value_per_key(&list);
  EXPECT_EQ(contents(list), (Pairs{{"a", 6}, {"b", 5}, {"c", 4}}));
}

TEST(UniqueAttributeKeys, UniqueListsAreLeftAsTheyAre) {
  AttributeList list;
  add(&list, "b", 1);
  add(&list, "a", 2);
  keep_last_value_per_key(&list);
  EXPECT_EQ(contents(list), (Pairs{{"b", 1}, {"a", 2}}));
  AttributeList empty;
  keep_last_value_per_key(&empty);
  EXPECT_TRUE(empty.empty());
}

TEST(UniqueAttributeKeys, LongListsToo) {
  AttributeList list;
  Pairs expected;
  for (int i = 0; i < 40; ++i) {
    add(&list, "k" + std::to_string(i), i);
    expected.emplace_back("k" + std::to_string(i), i);
  }
  for (int i = 0; i < 40; i += 3) {
    add(&list, "k" + std::to_string(i), 100 + i);
    expected[static_cast<std::size_t>(i)].second = 100 + i;
  }
  keep_last_value_per_key(&list);
  EXPECT_EQ(contents(list), expected);
}

TEST(UniqueAttributeKeys, EveryListOfEveryRequest) {
  const auto twice = [](AttributeList* list) {
    add(list, "k", 1);
    add(list, "k", 2);
  };
  const Pairs once = {{"k", 2}};

  proto::collector::trace::v1::ExportTraceServiceRequest traces;
  auto* resource_spans = traces.add_resource_spans();
  twice(resource_spans->mutable_resource()->mutable_attributes());
  auto* scope_spans = resource_spans->add_scope_spans();
  twice(scope_spans->mutable_scope()->mutable_attributes());
  auto* span = scope_spans->add_spans();
  twice(span->mutable_attributes());
  twice(span->add_events()->mutable_attributes());
  twice(span->add_links()->mutable_attributes());
  keep_last_value_per_key(&traces);
  EXPECT_EQ(contents(resource_spans->resource().attributes()), once);
  EXPECT_EQ(contents(scope_spans->scope().attributes()), once);
  EXPECT_EQ(contents(span->attributes()), once);
  EXPECT_EQ(contents(span->events(0).attributes()), once);
  EXPECT_EQ(contents(span->links(0).attributes()), once);

  proto::collector::logs::v1::ExportLogsServiceRequest logs;
  auto* resource_logs = logs.add_resource_logs();
  twice(resource_logs->mutable_resource()->mutable_attributes());
  auto* record = resource_logs->add_scope_logs()->add_log_records();
  twice(record->mutable_attributes());
  keep_last_value_per_key(&logs);
  EXPECT_EQ(contents(resource_logs->resource().attributes()), once);
  EXPECT_EQ(contents(record->attributes()), once);

  proto::collector::metrics::v1::ExportMetricsServiceRequest metrics;
  auto* scope_metrics = metrics.add_resource_metrics()->add_scope_metrics();
  auto* sum_point = scope_metrics->add_metrics()->mutable_sum()->add_data_points();
  twice(sum_point->mutable_attributes());
  twice(sum_point->add_exemplars()->mutable_filtered_attributes());
  auto* histogram_point = scope_metrics->add_metrics()->mutable_histogram()->add_data_points();
  twice(histogram_point->mutable_attributes());
  auto* gauge_point = scope_metrics->add_metrics()->mutable_gauge()->add_data_points();
  twice(gauge_point->mutable_attributes());
  keep_last_value_per_key(&metrics);
  EXPECT_EQ(contents(sum_point->attributes()), once);
  EXPECT_EQ(contents(sum_point->exemplars(0).filtered_attributes()), once);
  EXPECT_EQ(contents(histogram_point->attributes()), once);
  EXPECT_EQ(contents(gauge_point->attributes()), once);
}

}  // namespace
}  // namespace lens::exporters
