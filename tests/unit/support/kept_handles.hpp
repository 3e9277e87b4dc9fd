// The telemetry handles a test set up, for fixtures that shut them all down when the test ends.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "lens/result.hpp"
#include "lens/telemetry.hpp"

namespace lens::test_support {

class KeptHandles {
 protected:
  // The handle of a setup that must succeed (a failure is reported, a disabled handle returned).
  TelemetryHandle keep(Result<TelemetryHandle> result) {
    EXPECT_TRUE(result.ok()) << result.message();
    if (!result.ok()) return TelemetryHandle();
    handles_.push_back(*result);
    return *result;
  }
  void shut_down_kept() {
    for (auto& handle : handles_)
      static_cast<void>(handle.shutdown(std::chrono::milliseconds(2000)));
  }

 private:
  std::vector<TelemetryHandle> handles_;
};

}  // namespace lens::test_support
