// The example trainer's data: generated token sequences, each counting up from a random start by
// a random stride, so the loss falls as the model learns them. Reproducible: a batch depends only
// on its replica, iteration and microbatch. Pure functions, without libtorch, callable anywhere.
#pragma once

#include <cstdint>
#include <vector>

namespace lens::megatron::example {

// The vocabulary of the generated tokens (and the model's).
inline constexpr int kVocabSize = 64;

// The tokens of microbatch `microbatch` of iteration `iteration` for data-parallel rank
// `dp_rank`, row-major [rows, seq_length + 1]; the same on every pipeline stage of that replica,
// so the last stage has the labels without a transfer. Evaluation draws from a disjoint stream.
std::vector<std::int64_t> generated_tokens(int dp_rank, int iteration, int microbatch,
                                           bool evaluation, int rows, int seq_length);

}  // namespace lens::megatron::example
