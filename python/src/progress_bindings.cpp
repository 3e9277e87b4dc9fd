// Training progress for the hang watchdog (steps, iterations, the start-up watch) and counted
// collectives, whose newest entered and finished operations a hang report names (see
// bindings.hpp). Entry points run with the GIL held.
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "lens/collectives.hpp"
#include "lens/step_progress.hpp"

namespace py = pybind11;

namespace lens::python {
namespace {

// Counted collectives (lens/collectives.hpp): a group is a capsule of its counter (which lives as
// long as the process); operation names are interned once each, since the counters keep a pointer
// to them.
void add_collective_bindings(py::module_& m) {
  m.def(
      "collective_group",
      [](const std::string& name, const std::vector<std::int64_t>& ranks) {
        return py::capsule(&collective_group(name, ranks), "lens.CollectiveGroup");
      },
      "The process group `name` (with its global `ranks` on the first call) whose collectives "
      "are counted, for collective_enter/collective_finish.");
  m.def(
      "collective_enter",
      [](const py::capsule& group, const std::string& operation, std::uint64_t bytes) {
        static std::mutex mutex;
        static std::set<std::string>* interned = new std::set<std::string>();
        const char* op = nullptr;
        {
          std::lock_guard<std::mutex> lock(mutex);
          op = interned->insert(operation).first->c_str();
        }
        return group.get_pointer<CollectiveGroup>()->enter(op, bytes);
      },
      "Counts the group's next collective `operation` of `bytes` as entered; its sequence number.");
  m.def(
      "collective_finish",
      [](const py::capsule& group, std::uint64_t seq) {
        group.get_pointer<CollectiveGroup>()->finish(seq);
      },
      "Counts collective `seq` of the group as finished.");
  m.def(
      "collective_state",
      [](const py::capsule& group) {
        const CollectiveGroup::State state = group.get_pointer<CollectiveGroup>()->state();
        py::dict out;
        out["op"] = state.operation != nullptr ? state.operation : "";
        out["seq"] = state.seq;
        out["bytes"] = state.bytes;
        out["finished_seq"] = state.finished_seq;
        out["finished_op"] = state.finished_operation != nullptr ? state.finished_operation : "";
        return out;
      },
      "The group's counts: op, seq, bytes (the newest entered), finished_seq, finished_op.");
}

}  // namespace

void add_progress_bindings(py::module_& m) {
  m.def(
      "note_step_completed", [] { note_step_completed(); },
      "Marks one training step (one optimizer update) as finished: the step the hang watchdog "
      "watches (HANG_TIMEOUT, docs/configuration.md#hang-reports). Call it once per step, after "
      "the step's span; it costs a clock read and never raises.");
  add_collective_bindings(m);
  m.def(
      "note_iteration_started", [](std::int64_t iteration) { note_iteration_started(iteration); },
      "The training iteration now running, for the hang reports (lens.hang.iteration).");
  m.def(
      "expect_training_steps", [] { expect_training_steps(); },
      "Says this process trains: watched from setup until its first step with the start-up "
      "timeout (HANG_STARTUP_TIMEOUT). Call it before setup_telemetry.");
}

}  // namespace lens::python
