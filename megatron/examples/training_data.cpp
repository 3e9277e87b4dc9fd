// The example trainer's generated token sequences (see training_data.hpp).
#include "training_data.hpp"

#include <random>

namespace lens::megatron::example {

std::vector<std::int64_t> generated_tokens(int dp_rank, int iteration, int microbatch,
                                           bool evaluation, int rows, int seq_length) {
  std::seed_seq seed{dp_rank, iteration, microbatch, evaluation ? 1 : 0, 20261203};
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> start(0, kVocabSize - 1);
  std::uniform_int_distribution<int> stride(1, 3);
  std::vector<std::int64_t> tokens;
  tokens.reserve(static_cast<std::size_t>(rows) * (seq_length + 1));
  for (int r = 0; r < rows; ++r) {
    const int first = start(generator);
    const int step = stride(generator);
    for (int t = 0; t <= seq_length; ++t) tokens.push_back((first + t * step) % kVocabSize);
  }
  return tokens;
}

}  // namespace lens::megatron::example
