// Every ```cpp block of README.md and docs/ (cmake/LensDocSnippets.cmake makes each one a
// translation unit of its own in this binary) runs and returns 0: a block that does not compile
// fails the build, one that fails at run time fails here, named by its file and line.
#include <gtest/gtest.h>

#include "doc_context.hpp"

namespace {

TEST(DocSnippets, EveryCppBlockOfTheDocsRuns) {
  const auto& all = lens_doc_context::snippets();
  // The docs had 16 blocks when this test was written; fewer means the extraction broke.
  ASSERT_GE(all.size(), 16u);
  for (const auto& snippet : all) {
    SCOPED_TRACE(snippet.where);
    EXPECT_EQ(snippet.run(), 0) << snippet.where;
  }
}

}  // namespace
