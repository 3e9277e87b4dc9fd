// The bindings a Python trainer needs beyond the core API: the job's collective as a Python
// callable (so that rank 0 shares a generated run id and a trace seed over torch.distributed),
// and spans that start a trace of their own (each training iteration, as the C++ trainer does);
// the Megatron integration is megatron_bindings.cpp. Not API: registered into lens._lens by
// module.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "lens/resource.hpp"
#include "lens/result.hpp"

namespace lens::python {

// A Python callable broadcast(payload: bytes, root: int) -> bytes, which every rank calls and
// which returns root's payload everywhere, as the job's Collective. Its exception becomes an
// error (setup's "resolving the run id: broadcast from rank 0 failed: ..."); never throws.
class PythonCollective final : public Collective {
 public:
  PythonCollective(pybind11::object broadcast, int rank, int world_size)
      : broadcast_(std::move(broadcast)), rank_(rank), world_size_(world_size) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Result<std::string> broadcast(const std::string& payload, int root) override;

 private:
  pybind11::object broadcast_;
  int rank_;
  int world_size_;
};

// Adds TraceSeed, share_trace_seed, TraceRootSpan and trace_root_span to `m` (the megatron_*
// functions: megatron_bindings.cpp).
void add_training_bindings(pybind11::module_& m);

}  // namespace lens::python
