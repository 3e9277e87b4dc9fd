// The edit distance behind "did you mean ...?" suggestions (lens/known_variables.hpp).
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace lens::detail {

// The optimal-string-alignment distance: the fewest insertions, deletions, substitutions and
// swaps of two adjacent characters that turn `a` into `b` (case-sensitive, byte-wise).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace lens::detail
