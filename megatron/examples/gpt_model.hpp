// A small GPT (token and position embeddings, pre-norm transformer blocks, LM head) split into
// pipeline stages: the first stage embeds tokens, the last one produces logits, every stage runs
// its share of the layers. Activations are [sequence, batch, hidden] throughout (the layout of
// torch::nn::MultiheadAttention). Each block emits megatron.layer.forward with its
// self_attention and mlp children (group `layer`).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace lens::megatron::example {

// The model's shape. Built from the trainer's TrainingArgs, whose defaults are the example's: no
// defaults here, so that each value has one definition.
struct GptConfig {
  int vocab_size;
  int seq_length;
  int hidden_size;
  int num_attention_heads;
  int num_layers;
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const GptConfig& config, int layer_number);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& causal_mask);

 private:
  int layer_number_;
  torch::nn::LayerNorm ln_attention_{nullptr};
  torch::nn::MultiheadAttention attention_{nullptr};
  torch::nn::LayerNorm ln_mlp_{nullptr};
  torch::nn::Linear fc_in_{nullptr};
  torch::nn::Linear fc_out_{nullptr};
};
TORCH_MODULE(Block);

class StageImpl : public torch::nn::Module {
 public:
  // Layers [first_layer, first_layer + layer_count) of the model; `is_first`/`is_last` add the
  // embeddings / the final norm and LM head.
  StageImpl(const GptConfig& config, int first_layer, int layer_count, bool is_first, bool is_last);
  // First stage: token ids [batch, sequence]; other stages: activations [sequence, batch, hidden].
  // Last stage returns logits [batch, sequence, vocab]; others activations.
  torch::Tensor forward(const torch::Tensor& input);

  bool is_first() const { return is_first_; }
  bool is_last() const { return is_last_; }

 private:
  GptConfig config_;
  bool is_first_;
  bool is_last_;
  torch::nn::Embedding token_embedding_{nullptr};
  torch::nn::Embedding position_embedding_{nullptr};
  std::vector<Block> blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
  torch::Tensor causal_mask_;
};
TORCH_MODULE(Stage);

// The layers of `num_layers` that pipeline stage `stage` of `stages` owns: {first, count}, the
// remainder going to the first stages.
std::pair<int, int> stage_layers(int num_layers, int stage, int stages);

}  // namespace lens::megatron::example
