#include "model/weights.h"

#include "common/assert.h"
#include "cpu/kernels.h"

#include <sys/mman.h>

#include <cstring>
#include <algorithm>
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

constexpr size_t kHuge = size_t(2) << 20;
constexpr size_t kAlign = 4096;  // each matrix starts on its own page

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Bytes the arena needs for one matrix: bf16 (plain or V32) or int8 (Q32 + fp32 scales + int32 sums).
size_t matrix_elems(int n, int k, bool packed) { return packed ? cpu::packed_elems(n, k) : size_t(n) * size_t(k); }
size_t bf16_bytes(int n, int k, bool packed) { return round_up(matrix_elems(n, k, packed) * 2, kAlign); }
size_t int8_bytes(int n, int k) {
  return round_up(cpu::packed_bytes8(n, k), kAlign) + 2 * round_up(size_t(n) * 4, kAlign);
}

// Every matrix of `cfg`, in the order load() places them.
size_t arena_bytes(const ModelConfig& cfg, bool separate_lm_head, bool packed, Quantization q) {
  auto m = [&](int n, int k) { return q.int8 ? int8_bytes(n, k) : bf16_bytes(n, k, packed); };
  const int H = cfg.hidden_size, I = cfg.intermediate_size, Q = cfg.q_dim(), KV = cfg.kv_dim(), V = cfg.vocab_size;
  size_t per_layer = m(Q, H) + 2 * m(KV, H) + m(H, Q) + 2 * m(I, H) + m(H, I);
  // The embedding table stays bf16 (lookups); the LM head is int8 or bf16 as asked, a second copy
  // unless it is the (tied) bf16 embedding itself.
  const bool head8 = q.int8 && q.lm_head_int8;
  const size_t head = head8 ? int8_bytes(V, H) : separate_lm_head ? bf16_bytes(V, H, packed) : 0;
  return size_t(cfg.num_layers) * per_layer + bf16_bytes(V, H, packed) + head;
}

}  // namespace

// One 2 MiB-aligned anonymous mapping with transparent huge pages for all matrices.
WeightArena::WeightArena(size_t bytes) : bytes_(bytes) {
  void* p = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  auto raw = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (raw + kHuge - 1) & ~(kHuge - 1);
  if (aligned > raw) munmap(p, aligned - raw);
  size_t tail = (raw + bytes + kHuge) - (aligned + bytes);
  if (tail) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  base_ = reinterpret_cast<uint8_t*>(aligned);
  madvise(base_, bytes_, MADV_HUGEPAGE);
}

WeightArena::~WeightArena() {
  if (base_) munmap(base_, bytes_);
}

uint8_t* WeightArena::take(size_t bytes) {
  size_t b = round_up(bytes, kAlign);
  if (!base_ || used_ + b > bytes_) return nullptr;
  uint8_t* p = base_ + used_;
  used_ += b;
  return p;
}

namespace {}  // namespace

class WeightsBuilder {
 public:
  WeightsBuilder(ModelWeights& w) : w_(w) {}

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

  // A [rows, cols] matrix as bf16, converted if needed (into `converted`), else pointing into the file.
  Status source(const std::string& name, int64_t rows, int64_t cols, std::vector<bf16_t>& converted,
                const bf16_t** out) {
    const Src* s;
    if (Status st = find(name, {rows, cols}, &s); !st.is_ok()) return st;
    const size_t n = size_t(rows) * size_t(cols);
    const bf16_t* src = reinterpret_cast<const bf16_t*>(s->p);
    if (s->t->dtype != DType::BF16) {
      // NOTE: f16/f32 -> bf16 rounds (f16 loses 3 mantissa bits); the engine computes with bf16 weights.
      converted.resize(n);
      for (size_t i = 0; i < n; ++i) {
        float v;
        if (s->t->dtype == DType::F16) {
          uint16_t h;
          std::memcpy(&h, s->p + 2 * i, 2);
          v = f16_to_f32(h);
        } else {
          std::memcpy(&v, s->p + 4 * i, 4);
        }
        converted[i] = f32_to_bf16(v);
      }
      src = converted.data();
    } else if (reinterpret_cast<uintptr_t>(src) % 2 != 0) {
      return Status::error(s->t->path + ": tensor '" + name + "' is not 2-byte aligned in the file");
    }
    *out = src;
    return Status::ok();
  }

  // A [rows, cols] matrix as bf16, packed (cpu::pack_matrix) into owned huge-page memory.
  Status matrix(const std::string& name, int64_t rows, int64_t cols, const bf16_t** out, bool counted = true) {
    std::vector<bf16_t> converted;
    const bf16_t* src;
    if (Status st = source(name, rows, cols, converted, &src); !st.is_ok()) return st;
    const size_t n = size_t(rows) * size_t(cols);
    const size_t elems = matrix_elems(int(rows), int(cols), w_.packed);
    if (counted) w_.matrix_bytes += elems * 2;
    auto* dst = reinterpret_cast<bf16_t*>(w_.arena_->take(elems * 2));
    ENGINE_ASSERT(dst != nullptr);  // arena_bytes() sized the arena for exactly these matrices
    if (!w_.packed) {
      std::memcpy(dst, src, n * 2);
      *out = dst;
      return Status::ok();
    }
    // Packing is memory-bound; two threads halve a cold start.
    const int half = int(rows / 2);
    std::thread t([&] { cpu::pack_matrix(src, int(rows), int(cols), dst, 0, half); });
    cpu::pack_matrix(src, int(rows), int(cols), dst, half, int(rows));
    t.join();
    *out = dst;
    return Status::ok();
  }

  // A [rows, cols] matrix quantized to int8 (cpu::quantize_rows) into owned huge-page memory, rows
  // split over up to 16 threads in whole 32-row blocks.
  Status matrix8(const std::string& name, int64_t rows, int64_t cols, cpu::QMatrix* out) {
    std::vector<bf16_t> converted;
    const bf16_t* src;
    if (Status st = source(name, rows, cols, converted, &src); !st.is_ok()) return st;
    const int n = int(rows), k = int(cols);
    const size_t qb = cpu::packed_bytes8(n, k);
    w_.matrix_bytes += qb + size_t(n) * 8;
    auto* q = reinterpret_cast<int8_t*>(w_.arena_->take(qb));
    auto* scale = reinterpret_cast<float*>(w_.arena_->take(size_t(n) * 4));
    auto* wsum = reinterpret_cast<int32_t*>(w_.arena_->take(size_t(n) * 4));
    ENGINE_ASSERT(q != nullptr && scale != nullptr && wsum != nullptr);  // sized by arena_bytes()
    const int threads = std::clamp(int(std::thread::hardware_concurrency()), 1, 16);
    const int blocks = (n + cpu::kPackRows - 1) / cpu::kPackRows;
    const int per = (blocks + threads - 1) / threads * cpu::kPackRows;
    std::vector<std::thread> pool;
    for (int r0 = per; r0 < n; r0 += per)
      pool.emplace_back([=] { cpu::quantize_rows(src, n, k, q, scale, wsum, r0, std::min(n, r0 + per)); });
    cpu::quantize_rows(src, n, k, q, scale, wsum, 0, std::min(n, per));
    for (auto& t : pool) t.join();
    *out = {q, scale, wsum};
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

  ModelWeights& w_;
  std::map<std::string, Src> src_;
};

Result<std::unique_ptr<ModelWeights>> ModelWeights::load(const ModelConfig& cfg,
                                                         const std::vector<TensorSource>& tensors, bool packed,
                                                         Quantization quant) {
  auto w = std::make_unique<ModelWeights>();
  w->packed = packed;
  if (!quant.int8) quant.lm_head_int8 = false;
  w->quant = quant;
  WeightsBuilder b(*w);
  if (Status st = b.index(tensors); !st.is_ok()) return st;
  const int64_t H = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size;
  const int64_t Q = cfg.q_dim(), KV = cfg.kv_dim();
  Status st;
#define EE_TRY(expr)            \
  if (!(st = (expr)).is_ok()) { \
    return st;                  \
  }
  const bool separate_lm_head = !(cfg.tie_word_embeddings && !b.has("lm_head.weight"));
  w->arena_ = std::make_unique<WeightArena>(arena_bytes(cfg, separate_lm_head, packed, quant));
  if (!w->arena_->ok())
    return Status::error("out of memory: cannot allocate " + std::to_string(w->arena_->size()) +
                         " bytes for the weights");
  // Matrices are placed in the order a forward pass reads them, so a decode step streams through
  // one nearly contiguous region (hardware prefetchers and huge pages do the rest).
  w->layers.resize(size_t(cfg.num_layers));
  for (int l = 0; l < cfg.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& L = w->layers[size_t(l)];
    if (quant.int8) {
      L = {};
      EE_TRY(b.matrix8(p + "self_attn.q_proj.weight", Q, H, &L.i8.q_proj));
      EE_TRY(b.matrix8(p + "self_attn.k_proj.weight", KV, H, &L.i8.k_proj));
      EE_TRY(b.matrix8(p + "self_attn.v_proj.weight", KV, H, &L.i8.v_proj));
      EE_TRY(b.matrix8(p + "self_attn.o_proj.weight", H, Q, &L.i8.o_proj));
      EE_TRY(b.matrix8(p + "mlp.gate_proj.weight", I, H, &L.i8.gate_proj));
      EE_TRY(b.matrix8(p + "mlp.up_proj.weight", I, H, &L.i8.up_proj));
      EE_TRY(b.matrix8(p + "mlp.down_proj.weight", H, I, &L.i8.down_proj));
    } else {
      EE_TRY(b.matrix(p + "self_attn.q_proj.weight", Q, H, &L.q_proj));
      EE_TRY(b.matrix(p + "self_attn.k_proj.weight", KV, H, &L.k_proj));
      EE_TRY(b.matrix(p + "self_attn.v_proj.weight", KV, H, &L.v_proj));
      EE_TRY(b.matrix(p + "self_attn.o_proj.weight", H, Q, &L.o_proj));
      EE_TRY(b.matrix(p + "mlp.gate_proj.weight", I, H, &L.gate_proj));
      EE_TRY(b.matrix(p + "mlp.up_proj.weight", I, H, &L.up_proj));
      EE_TRY(b.matrix(p + "mlp.down_proj.weight", H, I, &L.down_proj));
    }
    EE_TRY(b.vector(p + "input_layernorm.weight", H, &L.input_norm));
    EE_TRY(b.vector(p + "post_attention_layernorm.weight", H, &L.post_attn_norm));
  }
  // The embedding table counts toward the bytes a step reads only when it is the LM head too.
  EE_TRY(b.matrix("model.embed_tokens.weight", V, H, &w->embed_tokens, !separate_lm_head && !quant.lm_head_int8));
  EE_TRY(b.vector("model.norm.weight", H, &w->final_norm));
  const std::string head = separate_lm_head ? "lm_head.weight" : "model.embed_tokens.weight";
  if (quant.lm_head_int8) {
    EE_TRY(b.matrix8(head, V, H, &w->lm_head8));
  } else if (separate_lm_head) {
    EE_TRY(b.matrix(head, V, H, &w->lm_head));
  } else {
    w->lm_head = w->embed_tokens;
  }
#undef EE_TRY
  w->files_.clear();  // everything was copied out: unmap the shards
  return w;
}

}  // namespace ee
