// The example GPT (see gpt_model.hpp).
#include "gpt_model.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "lens/megatron/span_groups.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/span.hpp"

namespace lens::megatron::example {

namespace spans = ::lens::megatron::spans;

BlockImpl::BlockImpl(const GptConfig& config, int layer_number) : layer_number_(layer_number) {
  ln_attention_ = register_module(
      "ln_attention", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})));
  attention_ = register_module("attention",
                               torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(
                                   config.hidden_size, config.num_attention_heads)));
  ln_mlp_ = register_module(
      "ln_mlp", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})));
  fc_in_ = register_module("fc_in", torch::nn::Linear(config.hidden_size, 4 * config.hidden_size));
  fc_out_ =
      register_module("fc_out", torch::nn::Linear(4 * config.hidden_size, config.hidden_size));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& causal_mask) {
  LENS_SPAN(spans::kLayerForward, {spans::attributes::kLayerNumber, layer_number_});
  torch::Tensor hidden = x;
  {
    LENS_SPAN(spans::kLayerSelfAttention);
    const torch::Tensor normed = ln_attention_(hidden);
    auto [attended, weights] = attention_->forward(normed, normed, normed,
                                                   /*key_padding_mask=*/torch::Tensor(),
                                                   /*need_weights=*/false, causal_mask);
    hidden = hidden + attended;
  }
  {
    LENS_SPAN(spans::kLayerMlp);
    hidden = hidden + fc_out_(torch::gelu(fc_in_(ln_mlp_(hidden))));
  }
  return hidden;
}

StageImpl::StageImpl(const GptConfig& config, int first_layer, int layer_count, bool is_first,
                     bool is_last)
    : config_(config), is_first_(is_first), is_last_(is_last) {
  if (is_first_) {
    token_embedding_ = register_module("token_embedding",
                                       torch::nn::Embedding(config.vocab_size, config.hidden_size));
    position_embedding_ = register_module(
        "position_embedding", torch::nn::Embedding(config.seq_length, config.hidden_size));
  }
  for (int i = 0; i < layer_count; ++i) {
    const int layer = first_layer + i;
    blocks_.push_back(register_module("block" + std::to_string(layer), Block(config, layer + 1)));
  }
  if (is_last_) {
    final_norm_ = register_module(
        "final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})));
    lm_head_ = register_module("lm_head", torch::nn::Linear(config.hidden_size, config.vocab_size));
  }
  // Position i may attend to positions <= i.
  causal_mask_ = torch::triu(
      torch::full({config.seq_length, config.seq_length}, -std::numeric_limits<float>::infinity()),
      /*diagonal=*/1);
}

torch::Tensor StageImpl::forward(const torch::Tensor& input) {
  torch::Tensor hidden;
  if (is_first_) {
    const auto positions = torch::arange(input.size(1), torch::kLong);
    // [batch, sequence, hidden] -> [sequence, batch, hidden]
    hidden = (token_embedding_(input) + position_embedding_(positions)).transpose(0, 1);
  } else {
    hidden = input;
  }
  for (auto& block : blocks_) hidden = block(hidden, causal_mask_);
  if (!is_last_) return hidden;
  return lm_head_(final_norm_(hidden)).transpose(0, 1);
}

std::pair<int, int> stage_layers(int num_layers, int stage, int stages) {
  const int base = num_layers / stages;
  const int extra = num_layers % stages;
  const int count = base + (stage < extra ? 1 : 0);
  const int first = stage * base + std::min(stage, extra);
  return {first, count};
}

}  // namespace lens::megatron::example
