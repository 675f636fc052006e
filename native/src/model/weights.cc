#include "model/weights.h"

#include <sys/mman.h>

#include <cstring>
#include <map>
#include <thread>

namespace ee {

namespace {

size_t dtype_size(DType d) { return d == DType::F32 ? 4 : 2; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void free_anon(uint16_t* p) {
  // Size is not needed for the mapping we made: see alloc_anon. munmap needs it, so we store it
  // in the 64 bytes in front of the data.
  auto* base = reinterpret_cast<uint8_t*>(p) - 64;
  size_t len;
  std::memcpy(&len, base, sizeof len);
  munmap(base, len);
}

uint16_t* alloc_anon(size_t bytes) {
  size_t len = bytes + 64;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, len, MADV_HUGEPAGE);
  std::memcpy(p, &len, sizeof len);
  return reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(p) + 64);
}

// Copies with two threads: the copy is memory-bound and a cold start of a 0.7 GB model matters.
void parallel_copy(void* dst, const void* src, size_t n) {
  size_t half = (n / 2) & ~size_t(4095);
  std::thread t([&] { std::memcpy(dst, src, half); });
  std::memcpy(static_cast<uint8_t*>(dst) + half, static_cast<const uint8_t*>(src) + half, n - half);
  t.join();
}

}  // namespace

class WeightsBuilder {
 public:
  WeightsBuilder(const ModelConfig& cfg, ModelWeights& w, bool copy) : cfg_(cfg), w_(w), copy_(copy) {}

  Status index(const std::vector<TensorSource>& tensors) {
    std::map<std::string, MappedFile*> by_path;
    for (const auto& t : tensors) {
      MappedFile* f;
      auto it = by_path.find(t.path);
      if (it == by_path.end()) {
        auto r = MappedFile::open(t.path);
        if (!r.is_ok()) return r.status();
        f = r.value();
        w_.files_.emplace_back(f);
        by_path[t.path] = f;
      } else {
        f = it->second;
      }
      if (t.offset > f->size() || t.nbytes > f->size() - t.offset)
        return Status::error(t.path + ": tensor '" + t.name + "' bytes [" + std::to_string(t.offset) + ", " +
                             std::to_string(t.offset + t.nbytes) + ") lie past the end of the file (" +
                             std::to_string(f->size()) + " bytes): truncated or corrupt file");
      int64_t numel = 1;
      for (int64_t d : t.shape) {
        if (d < 0) return Status::error(t.path + ": tensor '" + t.name + "' has a negative dimension");
        numel *= d;
      }
      if (uint64_t(numel) * dtype_size(t.dtype) != t.nbytes)
        return Status::error(t.path + ": tensor '" + t.name + "' shape " + shape_str(t.shape) +
                             " does not match its byte size " + std::to_string(t.nbytes));
      src_[t.name] = {&t, f->data() + t.offset};
    }
    return Status::ok();
  }

  // A [rows, cols] matrix as bf16.
  Status matrix(const std::string& name, int64_t rows, int64_t cols, const bf16_t** out) {
    const Src* s;
    if (Status st = find(name, {rows, cols}, &s); !st.is_ok()) return st;
    size_t n = size_t(rows) * size_t(cols);
    w_.matrix_bytes += n * 2;
    if (s->t->dtype == DType::BF16 && !copy_) {
      *out = reinterpret_cast<const bf16_t*>(s->p);
      return Status::ok();
    }
    uint16_t* dst = alloc_anon(n * 2);
    if (!dst) return Status::error("out of memory allocating " + name);
    w_.owned_bf16_.emplace_back(dst, free_anon);
    if (s->t->dtype == DType::BF16) {
      parallel_copy(dst, s->p, n * 2);
    } else if (s->t->dtype == DType::F16) {
      // NOTE: f16 -> bf16 loses 3 mantissa bits; the engine computes with bf16 weights.
      const auto* h = reinterpret_cast<const uint16_t*>(s->p);
      for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(f16_to_f32(h[i]));
    } else {
      const auto* f = reinterpret_cast<const float*>(s->p);
      for (size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, f + i, 4);
        dst[i] = f32_to_bf16(v);
      }
    }
    *out = dst;
    return Status::ok();
  }

  Status vector(const std::string& name, int64_t len, const float** out) {
    const Src* s;
    if (Status st = find(name, {len}, &s); !st.is_ok()) return st;
    auto buf = std::make_unique<float[]>(size_t(len));
    for (int64_t i = 0; i < len; ++i) {
      if (s->t->dtype == DType::F32) {
        std::memcpy(&buf[i], s->p + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, s->p + 2 * i, 2);
        buf[i] = s->t->dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
    }
    *out = buf.get();
    w_.owned_f32_.push_back(std::move(buf));
    return Status::ok();
  }

  bool has(const std::string& name) const { return src_.count(name) != 0; }

 private:
  struct Src {
    const TensorSource* t;
    const uint8_t* p;
  };

  Status find(const std::string& name, const std::vector<int64_t>& shape, const Src** out) {
    auto it = src_.find(name);
    if (it == src_.end()) return Status::error("checkpoint has no tensor '" + name + "'");
    const TensorSource& t = *it->second.t;
    if (t.shape != shape)
      return Status::error(t.path + ": tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected " +
                           shape_str(shape) + " from config.json");
    *out = &it->second;
    return Status::ok();
  }

  const ModelConfig& cfg_;
  ModelWeights& w_;
  bool copy_;
  std::map<std::string, Src> src_;
};

Result<std::unique_ptr<ModelWeights>> ModelWeights::load(const ModelConfig& cfg,
                                                          const std::vector<TensorSource>& tensors,
                                                          bool copy_to_anon) {
  auto w = std::make_unique<ModelWeights>();
  WeightsBuilder b(cfg, *w, copy_to_anon);
  if (Status st = b.index(tensors); !st.is_ok()) return st;
  const int64_t H = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size;
  const int64_t Q = cfg.q_dim(), KV = cfg.kv_dim();
  Status st;
#define EE_TRY(expr)            \
  if (!(st = (expr)).is_ok()) { \
    return st;                  \
  }
  EE_TRY(b.matrix("model.embed_tokens.weight", V, H, &w->embed_tokens));
  EE_TRY(b.vector("model.norm.weight", H, &w->final_norm));
  if (cfg.tie_word_embeddings && !b.has("lm_head.weight")) {
    w->lm_head = w->embed_tokens;
  } else {
    EE_TRY(b.matrix("lm_head.weight", V, H, &w->lm_head));
  }
  w->layers.resize(size_t(cfg.num_layers));
  for (int l = 0; l < cfg.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& L = w->layers[size_t(l)];
    EE_TRY(b.matrix(p + "self_attn.q_proj.weight", Q, H, &L.q_proj));
    EE_TRY(b.matrix(p + "self_attn.k_proj.weight", KV, H, &L.k_proj));
    EE_TRY(b.matrix(p + "self_attn.v_proj.weight", KV, H, &L.v_proj));
    EE_TRY(b.matrix(p + "self_attn.o_proj.weight", H, Q, &L.o_proj));
    EE_TRY(b.matrix(p + "mlp.gate_proj.weight", I, H, &L.gate_proj));
    EE_TRY(b.matrix(p + "mlp.up_proj.weight", I, H, &L.up_proj));
    EE_TRY(b.matrix(p + "mlp.down_proj.weight", H, I, &L.down_proj));
    EE_TRY(b.vector(p + "input_layernorm.weight", H, &L.input_norm));
    EE_TRY(b.vector(p + "post_attention_layernorm.weight", H, &L.post_attn_norm));
  }
#undef EE_TRY
  return w;
}

}  // namespace ee
