// Model hyper-parameters. Filled from config.json by the TypeScript loader (JSON never enters
// native code); nothing here is fixed to the 0.3B shape.
#pragma once
#include <cstdint>
#include <vector>

namespace ee {

struct ModelConfig {
  int vocab_size = 0;         // embedding rows (103424 for ERNIE-4.5-0.3B)
  int hidden_size = 0;        // 1024
  int intermediate_size = 0;  // 3072
  int num_layers = 0;         // 18
  int num_heads = 0;          // 16 query heads
  int num_kv_heads = 0;       // 2 KV heads (GQA)
  int head_dim = 0;           // 128
  float rms_norm_eps = 1e-5f;
  bool tie_word_embeddings = true;
  // RoPE: true = interleaved pairs (2i, 2i+1) as ERNIE-4.5 / GPT-J; false = halves (i, i+d/2) as Llama.
  bool rope_interleaved = true;
  // head_dim/2 inverse frequencies in fp32, computed by the loader exactly as the reference does
  // (rope_theta, and rope scaling where the config has it).
  std::vector<float> inv_freq;

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
};

}  // namespace ee
