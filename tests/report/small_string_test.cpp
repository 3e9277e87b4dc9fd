// SmallString: inline up to its capacity, on the heap beyond, a value like std::string (copies,
// moves, self-assignment, assignment from a view into itself), compared and printed as text.
#include "report/small_string.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

namespace lens::report {
namespace {

TEST(ReportSmallString, KeepsSpanIdsAndTraceIdsInline) {
  EXPECT_EQ(sizeof(ShortText), 32u);
  EXPECT_EQ(sizeof(TraceIdText), 40u);
  const std::string trace_id(32, 'a');
  TraceIdText inline_trace = trace_id;
  EXPECT_EQ(inline_trace, trace_id);
  // Inline: the characters live inside the object.
  const auto* begin = reinterpret_cast<const char*>(&inline_trace);
  EXPECT_GE(inline_trace.data(), begin);
  EXPECT_LT(inline_trace.data(), begin + sizeof(inline_trace));
  ShortText heap = std::string(31, 'x');
  const auto* heap_begin = reinterpret_cast<const char*>(&heap);
  EXPECT_TRUE(heap.data() < heap_begin || heap.data() >= heap_begin + sizeof(heap));
  EXPECT_EQ(heap.size(), 31u);
  EXPECT_EQ(heap, std::string(31, 'x'));
}

TEST(ReportSmallString, BehavesAsAValue) {
  for (const std::string& text : {std::string(), std::string("megatron.train_step"),
                                  std::string(30, 'i'), std::string(100, 'h')}) {
    ShortText a = text;
    ShortText b = a;  // copy
    EXPECT_EQ(b, text);
    ShortText c = std::move(a);  // move leaves the source empty
    EXPECT_EQ(c, text);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    ShortText d = "short";
    d = c;  // copy assignment over an inline value
    EXPECT_EQ(d, text);
    ShortText e = std::string(50, 'z');
    e = std::move(d);  // move assignment over a heap value
    EXPECT_EQ(e, text);
    e = e;  // self-assignment
    EXPECT_EQ(e, text);
    e = std::string_view(e).substr(std::min<std::size_t>(1, text.size()));  // a view into itself
    EXPECT_EQ(e, std::string_view(text).substr(std::min<std::size_t>(1, text.size())));
    e.clear();
    EXPECT_TRUE(e.empty());
    EXPECT_EQ(e, "");
  }
  std::vector<ShortText> many(100, ShortText(std::string(40, 'v')));
  many.resize(1000);  // reallocation moves them
  EXPECT_EQ(many[99], std::string(40, 'v'));
  EXPECT_TRUE(many[999].empty());
}

TEST(ReportSmallString, ComparesConvertsAndPrintsAsText) {
  const ShortText name = "megatron.optimizer_step";
  EXPECT_TRUE(name == "megatron.optimizer_step");
  EXPECT_TRUE("megatron.optimizer_step" == name);
  EXPECT_TRUE(name != std::string("megatron.train_step"));
  EXPECT_TRUE(name < std::string_view("megatron.z"));
  EXPECT_TRUE(name == ShortText("megatron.optimizer_step"));
  const std::string copy = name;
  EXPECT_EQ(copy, "megatron.optimizer_step");
  std::ostringstream out;
  out << name;
  EXPECT_EQ(out.str(), "megatron.optimizer_step");
  EXPECT_EQ(nlohmann::json(name), nlohmann::json("megatron.optimizer_step"));
  EXPECT_EQ(nlohmann::json({{"name", name}}).dump(), R"({"name":"megatron.optimizer_step"})");
}

}  // namespace
}  // namespace lens::report
