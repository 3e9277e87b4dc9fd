// Compiled as a file of the metrics layer, it includes a header of the export layer above it:
// it must not build (tests/CMakeLists.txt, layers.upward_include_fails).
#include "export/exporters.hpp"
