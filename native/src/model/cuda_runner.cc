#include "model/cuda_runner.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "ernie_cuda.h"

namespace ee {

namespace {

constexpr int kErr = 1024;

// The library's entry points, resolved once per path; the handle is never closed (CUDA's runtime
// does not survive being unloaded and reloaded in one process).
struct CudaLib {
  int (*abi_version)();
  int (*device_count)(char*, int);
  EeCudaModel* (*create)(const EeCudaModelDesc*, char*, int);
  void (*destroy)(EeCudaModel*);
  int (*info)(EeCudaModel*, EeCudaInfo*);
  int (*forward)(EeCudaModel*, const EeCudaSlice*, int, float*, int32_t*, EeCudaSampleFill, void*, char*, int);
  int (*copy_blocks)(EeCudaModel*, const int32_t*, const int32_t*, int, char*, int);
  void (*graph_stats)(EeCudaModel*, uint64_t*, uint64_t*, uint64_t*);
};

Result<const CudaLib*> open_lib(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, CudaLib> libs;
  std::lock_guard<std::mutex> lock(mu);
  auto it = libs.find(path);
  if (it != libs.end()) return &it->second;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return Status::error("cannot load the CUDA backend " + path + ": " + (e ? e : "unknown error") +
                         " (build it with `bash native/cuda/build.sh` on a machine with nvcc)");
  }
  CudaLib l{};
  bool ok = true;
  auto sym = [&](const char* name) {
    void* p = dlsym(h, name);
    if (!p) ok = false;
    return p;
  };
  l.abi_version = reinterpret_cast<int (*)()>(sym("ee_cuda_abi_version"));
  l.device_count = reinterpret_cast<int (*)(char*, int)>(sym("ee_cuda_device_count"));
  l.create = reinterpret_cast<EeCudaModel* (*)(const EeCudaModelDesc*, char*, int)>(sym("ee_cuda_create"));
  l.destroy = reinterpret_cast<void (*)(EeCudaModel*)>(sym("ee_cuda_destroy"));
  l.info = reinterpret_cast<int (*)(EeCudaModel*, EeCudaInfo*)>(sym("ee_cuda_info"));
  l.forward = reinterpret_cast<int (*)(EeCudaModel*, const EeCudaSlice*, int, float*, int32_t*, EeCudaSampleFill, void*,
                                       char*, int)>(sym("ee_cuda_forward"));
  l.copy_blocks = reinterpret_cast<int (*)(EeCudaModel*, const int32_t*, const int32_t*, int, char*, int)>(
      sym("ee_cuda_copy_blocks"));
  l.graph_stats = reinterpret_cast<void (*)(EeCudaModel*, uint64_t*, uint64_t*, uint64_t*)>(sym("ee_cuda_graph_stats"));
  if (!ok) return Status::error(path + ": missing ee_cuda_* symbols (not a libernie_cuda build?)");
  if (l.abi_version() != EE_CUDA_ABI_VERSION)
    return Status::error(path + ": ABI version " + std::to_string(l.abi_version()) + ", the addon expects " +
                         std::to_string(EE_CUDA_ABI_VERSION) + " (rebuild native/cuda)");
  return &libs.emplace(path, l).first->second;
}

class CudaModelRunner : public IModelRunner {
 public:
  CudaModelRunner(const CudaLib* lib, EeCudaModel* m, ModelConfig cfg, int block_size)
      : lib_(lib), m_(m), cfg_(std::move(cfg)), block_size_(block_size) {
    lib_->info(m_, &info_);
  }
  ~CudaModelRunner() override { lib_->destroy(m_); }

  Status forward(const std::vector<SeqSlice>& batch, std::vector<float>& logits) override {
    if (Status st = validate_batch(cfg_, info_.num_blocks, block_size_, batch); !st.is_ok()) return st;
    logits.resize(size_t(rows(batch)) * size_t(cfg_.vocab_size));
    return run(batch, logits.data(), nullptr);
  }
  bool has_device_argmax() const override { return true; }
  Status forward_argmax(const std::vector<SeqSlice>& batch, std::vector<int32_t>& tokens) override {
    if (Status st = validate_batch(cfg_, info_.num_blocks, block_size_, batch); !st.is_ok()) return st;
    tokens.resize(size_t(rows(batch)));
    int32_t dummy;
    return run(batch, nullptr, tokens.empty() ? &dummy : tokens.data());
  }
  bool has_device_sampling() const override { return true; }
  Status forward_sample(const std::vector<SeqSlice>& batch, const SamplingFill& params,
                        std::vector<int32_t>& tokens) override {
    if (Status st = validate_batch(cfg_, info_.num_blocks, block_size_, batch); !st.is_ok()) return st;
    tokens.resize(size_t(rows(batch)));
    static_assert(DeviceSampling::kMaxBans == EE_CUDA_MAX_BANS, "one ban list size on both sides of the ABI");
    // Called by the library on this thread, between the forward's launch and the sampling kernel's.
    struct Fill {
      const SamplingFill* params;
      std::vector<DeviceSampling> rows;
    } ctx{&params, {}};
    const EeCudaSampleFill fill = [](void* c, EeCudaSample* out, int n, uint32_t* masks, int mask_words) {
      Fill& f = *static_cast<Fill*>(c);
      f.rows.assign(size_t(n), DeviceSampling{});
      (*f.params)(f.rows, masks, mask_words);
      for (int i = 0; i < n; ++i) {
        const DeviceSampling& p = f.rows[size_t(i)];
        out[i] = EeCudaSample{p.temperature, p.top_p, p.min_p, p.u, p.top_k, p.n_ban, {}, p.masked ? 1 : 0};
        std::copy(p.ban, p.ban + DeviceSampling::kMaxBans, out[i].ban);
      }
    };
    int32_t dummy;
    return run(batch, nullptr, tokens.empty() ? &dummy : tokens.data(), fill, &ctx);
  }
  Status copy_blocks(const std::vector<std::pair<int, int>>& src_dst) override {
    if (src_dst.empty()) return Status::ok();
    std::vector<int32_t> src, dst;
    for (const auto& [s, d] : src_dst) {
      src.push_back(s);
      dst.push_back(d);
    }
    char err[kErr] = {0};
    if (lib_->copy_blocks(m_, src.data(), dst.data(), int(src.size()), err, kErr) != 0) return Status::error(err);
    return Status::ok();
  }
  const ModelConfig& config() const override { return cfg_; }
  int num_blocks() const override { return info_.num_blocks; }
  int block_size() const override { return block_size_; }
  uint64_t kv_bytes() const override { return info_.kv_bytes; }
  uint64_t weight_bytes() const override { return info_.weight_bytes; }
  const char* backend() const override { return "cuda"; }

  void stats(uint64_t* g, uint64_t* e, uint64_t* captures, std::string* name, uint64_t* used) {
    lib_->graph_stats(m_, g, e, captures);
    EeCudaInfo i;
    lib_->info(m_, &i);
    *name = i.device_name;
    *used = i.gpu_bytes_used;
  }

 private:
  static int rows(const std::vector<SeqSlice>& batch) {
    int r = 0;
    for (const SeqSlice& s : batch) r += s.logits == SeqSlice::kAll ? s.n_tokens : s.logits == SeqSlice::kLast ? 1 : 0;
    return r;
  }
  Status run(const std::vector<SeqSlice>& batch, float* logits, int32_t* argmax, EeCudaSampleFill fill = nullptr,
             void* fill_ctx = nullptr) {
    std::vector<EeCudaSlice> s;
    s.reserve(batch.size());
    for (const SeqSlice& b : batch)
      s.push_back({b.tokens, b.n_tokens, b.start_pos, b.block_table, b.n_blocks, int(b.logits)});
    char err[kErr] = {0};
    if (lib_->forward(m_, s.data(), int(s.size()), logits, argmax, fill, fill_ctx, err, kErr) != 0)
      return Status::error(err);
    return Status::ok();
  }

  const CudaLib* lib_;
  EeCudaModel* m_;
  ModelConfig cfg_;
  int block_size_;
  EeCudaInfo info_{};
};

}  // namespace

CudaProbe probe_cuda(const std::string& library) {
  CudaProbe p;
  auto lib = open_lib(library);
  if (!lib.is_ok()) {
    p.reason = lib.status().message();
    return p;
  }
  char err[kErr] = {0};
  p.devices = lib.value()->device_count(err, kErr);
  p.available = p.devices > 0;
  if (!p.available) p.reason = err;
  return p;
}

Result<std::unique_ptr<IModelRunner>> make_cuda_runner(const ModelConfig& cfg, const std::vector<TensorSource>& tensors,
                                                       const CudaOptions& o) {
  auto lib = open_lib(o.library);
  if (!lib.is_ok()) return lib.status();
  auto w = ModelWeights::load(cfg, tensors, /*packed=*/false);
  if (!w.is_ok()) return w.status();
  const ModelWeights& W = *w.value();
  const size_t L = W.layers.size();
  std::vector<const uint16_t*> q(L), k(L), v(L), out(L), gate(L), up(L), down(L);
  std::vector<const float*> in_norm(L), post_norm(L);
  for (size_t l = 0; l < L; ++l) {
    const LayerWeights& lw = W.layers[l];
    q[l] = lw.q_proj;
    k[l] = lw.k_proj;
    v[l] = lw.v_proj;
    out[l] = lw.o_proj;
    gate[l] = lw.gate_proj;
    up[l] = lw.up_proj;
    down[l] = lw.down_proj;
    in_norm[l] = lw.input_norm;
    post_norm[l] = lw.post_attn_norm;
  }
  EeCudaModelDesc d{};
  d.vocab = cfg.vocab_size;
  d.hidden = cfg.hidden_size;
  d.intermediate = cfg.intermediate_size;
  d.layers = cfg.num_layers;
  d.heads = cfg.num_heads;
  d.kv_heads = cfg.num_kv_heads;
  d.head_dim = cfg.head_dim;
  d.rms_norm_eps = cfg.rms_norm_eps;
  d.rope_interleaved = cfg.rope_interleaved ? 1 : 0;
  d.inv_freq = cfg.inv_freq.data();
  d.embed = W.embed_tokens;
  d.lm_head = W.lm_head;
  d.final_norm = W.final_norm;
  d.q_proj = q.data();
  d.k_proj = k.data();
  d.v_proj = v.data();
  d.o_proj = out.data();
  d.gate_proj = gate.data();
  d.up_proj = up.data();
  d.down_proj = down.data();
  d.input_norm = in_norm.data();
  d.post_attn_norm = post_norm.data();
  d.block_size = o.block_size;
  d.num_blocks = o.num_blocks;
  d.gpu_memory_utilization = o.gpu_memory_utilization;
  d.max_model_len = o.max_model_len;
  d.max_num_seqs = o.max_num_seqs;
  d.max_batched_tokens = o.max_batched_tokens;
  d.enforce_eager = o.enforce_eager ? 1 : 0;
  d.precise = o.precise ? 1 : 0;
  d.kv_bf16 = o.kv_bf16 ? 1 : 0;
  d.capture_graphs = o.capture_graphs && !o.enforce_eager ? 1 : 0;
  d.device = o.device;
  char err[kErr] = {0};
  EeCudaModel* m = lib.value()->create(&d, err, kErr);
  if (!m) return Status::error(std::string("CUDA backend: ") + err);
  return std::unique_ptr<IModelRunner>(new CudaModelRunner(lib.value(), m, cfg, o.block_size));
}

bool cuda_graph_stats(IModelRunner& r, uint64_t* g, uint64_t* e, uint64_t* captures, std::string* name,
                      uint64_t* used) {
  auto* c = dynamic_cast<CudaModelRunner*>(&r);
  if (!c) return false;
  c->stats(g, e, captures, name, used);
  return true;
}

}  // namespace ee
