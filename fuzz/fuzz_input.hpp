// Helpers shared by the fuzz targets: deterministic ways to cut one fuzz input into what a parser
// takes (an argv-style list, an environment of KEY=VALUE lines), and the abort that turns a broken
// invariant into a crash libFuzzer reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lens/env.hpp"

namespace lens::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Every part between separators, empty ones included ("a,,b" -> "a", "", "b"; "" -> none).
inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  if (text.empty()) {
    return parts;
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

// An environment from `KEY=VALUE` lines ('\n'-separated; later lines win; a line without '='
// sets KEY to ""). KEY is a variable name taken verbatim, or a decimal number of at most four
// digits that picks keys[n % keys.size()], so that every variable a parser reads is two bytes
// away for a fuzzer.
inline Env::Map environment(std::string_view text, const std::vector<std::string>& keys) {
  Env::Map variables;
  for (const std::string& line : split(text, '\n')) {
    const std::size_t eq = line.find('=');
    std::string key = line.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : line.substr(eq + 1);
    if (!key.empty() && key.size() <= 4 && !keys.empty() &&
        key.find_first_not_of("0123456789") == std::string::npos) {
      key = keys[std::stoul(key) % keys.size()];
    }
    variables.insert_or_assign(std::move(key), std::move(value));
  }
  return variables;
}

// A property the target checks does not hold: report it as a crash.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "lens fuzz target: invariant broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace lens::fuzz
