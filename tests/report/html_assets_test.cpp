// The pages' stylesheet and scripts embedded at build time (cmake/LensEmbed.cmake): the library
// holds each file of tools/lens/report/assets/ byte for byte, the pages carry them verbatim, and
// no asset could end its inline element early.
#include "report/html_assets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "report/compare_html_writer.hpp"
#include "report/html_writer.hpp"
#include "report_test_support.hpp"

namespace lens::report {
namespace {

struct EmbeddedAsset {
  const char* file;
  std::string_view (*bytes)();
};

constexpr EmbeddedAsset kEmbeddedAssets[] = {
    {"report.css", report_css}, {"report.js", report_script}, {"compare.js", compare_script}};

std::string asset_file(const char* name) {
  const std::string path = std::string(LENS_SOURCE_DIR) + "/tools/lens/report/assets/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

TEST(ReportAssets, EmbeddedBytesAreTheFilesBytesAfterANewline) {
  for (const EmbeddedAsset& asset : kEmbeddedAssets) {
    const std::string file = asset_file(asset.file);
    ASSERT_GT(file.size(), 1000u) << asset.file;
    EXPECT_EQ(asset.bytes(), "\n" + file) << asset.file;
  }
}

TEST(ReportAssets, NoAssetEndsItsInlineElementEarly) {
  // Inside <style> or <script>, "</style" or "</script" (any case) would end the element.
  for (const EmbeddedAsset& asset : kEmbeddedAssets) {
    const std::string text = lowercase(asset.bytes());
    EXPECT_EQ(text.find("</script"), std::string::npos) << asset.file;
    EXPECT_EQ(text.find("</style"), std::string::npos) << asset.file;
    EXPECT_EQ(text.find("<!--"), std::string::npos) << asset.file;
  }
}

TEST(ReportAssets, PagesCarryTheAssetsVerbatim) {
  HtmlContext context;
  context.source_dir = "/runs/x";
  const std::string report =
      testing::html_page(testing::analyze_spec({.ranks = 2, .iterations = 5}), context);
  const std::string style = "<style>" + std::string(report_css()) + "</style>\n";
  EXPECT_NE(report.find(style), std::string::npos);
  EXPECT_NE(report.find("<script>" + std::string(report_script()) + "</script>\n</body>"),
            std::string::npos);

  std::ostringstream compare;
  write_comparison_html({}, {}, compare);
  EXPECT_NE(compare.str().find(style), std::string::npos);
  EXPECT_NE(compare.str().find("<script>" + std::string(compare_script()) + "</script>\n</body>"),
            std::string::npos);
}

}  // namespace
}  // namespace lens::report
