// Checkpoint save and load of the example trainer (see checkpoint.hpp).
#include "checkpoint.hpp"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "lens/megatron/spans.hpp"
#include "lens/span.hpp"

namespace lens::megatron::example {
namespace {

namespace fs = std::filesystem;
namespace spans = ::lens::megatron::spans;

fs::path stage_file(const std::string& dir, int iteration, int pipeline_rank, int pipeline_size) {
  char iteration_dir[32];
  std::snprintf(iteration_dir, sizeof(iteration_dir), "iter_%07d", iteration);
  char rank_dir[32];
  if (pipeline_size > 1) {
    std::snprintf(rank_dir, sizeof(rank_dir), "mp_rank_00_%03d", pipeline_rank);
  } else {
    std::snprintf(rank_dir, sizeof(rank_dir), "mp_rank_00");
  }
  return fs::path(dir) / iteration_dir / rank_dir / "model_optim_rng.pt";
}

}  // namespace

Status save_checkpoint(const std::string& dir, int iteration, int pipeline_rank, int pipeline_size,
                       bool writer, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                       const std::function<void()>& inside_span) {
  LENS_SPAN(spans::kSaveCheckpoint, {spans::attributes::kIteration, iteration});
  if (inside_span) inside_span();
  if (!writer) return {};
  try {
    torch::serialize::OutputArchive archive;
    {
      LENS_SPAN(spans::kSaveCheckpointStateDict);
      torch::serialize::OutputArchive model_archive;
      model.save(model_archive);
      archive.write("model", model_archive);
      torch::serialize::OutputArchive optimizer_archive;
      optimizer.save(optimizer_archive);
      archive.write("optimizer", optimizer_archive);
      archive.write("iteration", torch::tensor(static_cast<std::int64_t>(iteration)));
    }
    LENS_SPAN(spans::kSaveCheckpointIoWrite);
    const fs::path file = stage_file(dir, iteration, pipeline_rank, pipeline_size);
    fs::create_directories(file.parent_path());
    // Written under a temporary name, then renamed: a crash never leaves a torn file behind.
    const fs::path partial = file.string() + ".partial";
    archive.save_to(partial.string());
    fs::rename(partial, file);
  } catch (const std::exception& e) {
    return Error("Cannot save the checkpoint of iteration " + std::to_string(iteration) +
                 " into '" + dir + "': " + e.what());
  }
  return {};
}

Status mark_latest(const std::string& dir, int iteration) {
  const fs::path tracker = fs::path(dir) / "latest_checkpointed_iteration.txt";
  const fs::path partial = tracker.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << iteration << "\n";
    if (!out.flush()) {
      return Error("Cannot write '" + partial.string() + "'");
    }
  }
  std::error_code error;
  fs::rename(partial, tracker, error);
  if (error) return Error("Cannot write '" + tracker.string() + "': " + error.message());
  return {};
}

Result<std::optional<int>> load_checkpoint(const std::string& dir, int pipeline_rank,
                                           int pipeline_size, torch::nn::Module& model,
                                           torch::optim::Optimizer& optimizer) {
  LENS_SPAN(spans::kLoadCheckpoint);
  const fs::path tracker = fs::path(dir) / "latest_checkpointed_iteration.txt";
  std::ifstream in(tracker);
  if (!in) return std::optional<int>();
  int iteration = -1;
  if (!(in >> iteration) || iteration < 0) {
    return Error("'" + tracker.string() + "' does not hold an iteration number");
  }
  const fs::path file = stage_file(dir, iteration, pipeline_rank, pipeline_size);
  try {
    torch::serialize::InputArchive archive;
    {
      LENS_SPAN(spans::kLoadCheckpointIoRead);
      archive.load_from(file.string());
    }
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    torch::Tensor saved_iteration;
    archive.read("iteration", saved_iteration);
    if (saved_iteration.item<std::int64_t>() != iteration) {
      return Error("'" + file.string() + "' holds iteration " +
                   std::to_string(saved_iteration.item<std::int64_t>()) + ", not " +
                   std::to_string(iteration));
    }
  } catch (const std::exception& e) {
    return Error("Cannot load the checkpoint '" + file.string() + "': " + e.what());
  }
  return std::optional<int>(iteration);
}

}  // namespace lens::megatron::example
