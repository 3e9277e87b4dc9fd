// Linked as a file of the metrics layer, it calls a function of the validate layer, which
// metrics does not depend on, through a public header every layer sees: its closure must not
// link (tests/CMakeLists.txt, layers.link.undeclared_call_fails).
#include "lens/validate.hpp"

namespace lens_layer_probe {

lens::Status validate_from_the_metrics_layer(const lens::Config& config) {
  return lens::validate(config);
}

}  // namespace lens_layer_probe
