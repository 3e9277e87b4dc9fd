// The shared text parsers: Python int()/float() rules, boolean words, percent-decoding and
// -encoding, hex digits.
#include "core/parse.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/hex.hpp"

namespace lens::detail {
namespace {

TEST(ParseInt, AcceptsPythonIntForms) {
  EXPECT_EQ(parse_int64("0"), 0);
  EXPECT_EQ(parse_int64(" -1 "), -1);
  EXPECT_EQ(parse_int64("+42"), 42);
  EXPECT_EQ(parse_int64("1_000"), 1000);
  EXPECT_EQ(parse_int64("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_int64("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
}

TEST(ParseInt, RejectsEverythingElse) {
  for (const char* text : {"", " ", "3.0", "0x10", "last", "1__0", "_1", "1_", "-", "+", "1 2",
                           "9223372036854775808", "-9223372036854775809"}) {
    EXPECT_FALSE(parse_int64(text).has_value()) << text;
  }
}

TEST(ParseDouble, AcceptsPythonFloatForms) {
  EXPECT_EQ(parse_double("0.1"), 0.1);
  EXPECT_EQ(parse_double(".5"), 0.5);
  EXPECT_EQ(parse_double("1e-1"), 0.1);
  EXPECT_EQ(parse_double(" 1 "), 1.0);
  EXPECT_EQ(parse_double("-inf"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_double("Infinity"), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(*parse_double("nan")));
  EXPECT_EQ(parse_double("1_0.5"), 10.5);
}

TEST(ParseDouble, RejectsEverythingElse) {
  for (const char* text : {"", "high", "0x1p3", "1.0.0", "1e", "--1", "1,5"}) {
    EXPECT_FALSE(parse_double(text).has_value()) << text;
  }
}

TEST(ParseBool, AcceptsTheLensWords) {
  for (const char* text : {"1", "true", "TRUE", "yes", "On", " on "}) {
    EXPECT_EQ(parse_bool(text), true) << text;
  }
  for (const char* text : {"0", "false", "No", "OFF"}) {
    EXPECT_EQ(parse_bool(text), false) << text;
  }
  for (const char* text : {"", "maybe", "2", "y", "enabled"}) {
    EXPECT_FALSE(parse_bool(text).has_value()) << text;
  }
}

TEST(PercentDecode, DecodesAndRejectsMalformedEscapes) {
  EXPECT_EQ(percent_decode("a%20b%2C%3d"), "a b,=");
  EXPECT_EQ(percent_decode("plain"), "plain");
  EXPECT_FALSE(percent_decode("%").has_value());
  EXPECT_FALSE(percent_decode("%4").has_value());
  EXPECT_FALSE(percent_decode("%zz").has_value());
}

TEST(PercentEncode, KeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(percent_encode("aZ09-._~ /%\xc3\xbc"), "aZ09-._~%20%2F%25%C3%BC");
  EXPECT_EQ(percent_decode(percent_encode("k=v, w;\x01")), "k=v, w;\x01");
}

TEST(Hex, EncodesLowercaseAndDecodesEitherCaseOrLowercaseOnly) {
  std::string out = "0x";
  core::append_lower_hex(out, std::array<std::uint8_t, 3>{0x00, 0xab, 0xF0});
  EXPECT_EQ(out, "0x00abf0");
  std::array<std::uint8_t, 2> bytes{};
  EXPECT_TRUE(core::decode_hex("aBcD", bytes));
  EXPECT_EQ(bytes, (std::array<std::uint8_t, 2>{0xab, 0xcd}));
  EXPECT_TRUE(core::decode_hex("09af", bytes, /*lowercase_only=*/true));
  EXPECT_EQ(bytes, (std::array<std::uint8_t, 2>{0x09, 0xaf}));
  EXPECT_FALSE(core::decode_hex("09aF", bytes, /*lowercase_only=*/true));
  EXPECT_FALSE(core::decode_hex("abc", bytes));
  EXPECT_FALSE(core::decode_hex("abcdef", bytes));
  EXPECT_FALSE(core::decode_hex("abcg", bytes));
  EXPECT_EQ(core::hex_digit_value('F'), 15);
  EXPECT_EQ(core::hex_digit_value('F', /*lowercase_only=*/true), -1);
}

TEST(Split, KeepsEmptyParts) {
  const auto parts = split("a,,b,", ',');
  ASSERT_EQ(parts.size(), 4U);
  EXPECT_EQ(parts[0], "a");
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(parts[2], "b");
  EXPECT_EQ(parts[3], "");
}

}  // namespace
}  // namespace lens::detail
