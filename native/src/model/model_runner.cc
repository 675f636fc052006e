#include "model/model_runner.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "common/assert.h"
#include "model/rope.h"

#include <chrono>

namespace ee {

namespace {
using Clock = std::chrono::steady_clock;
// Adds the time since `t` to `acc` (ms) and restarts `t`.
inline void lap(Clock::time_point& t, double& acc) {
  auto now = Clock::now();
  acc += std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
}
// Weight rows per GEMM task. NOTE: 128 rows (256 KiB at K = 1024) decoded the 0.3B shape fastest
// of 64, 96, 128 and 256 (bench:engine); for a 512-token prefill (bf16) 16 rows per task were
// slower and 32 the same: the GEMM is not bound by streaming weights from L2. Figures:
// native/README.md.
constexpr int kGemmRowsPerTask = 128;
static_assert(kGemmRowsPerTask % cpu::kPackRows == 0, "GEMM tasks start on packed-block boundaries");
constexpr int kAttnTokensPerTask = 8;  // query tokens per attention task in prefill
}  // namespace

ModelRunner::ModelRunner(ModelConfig cfg, std::unique_ptr<ModelWeights> weights, std::unique_ptr<KvCache> kv,
                         ThreadPool* pool, const cpu::Kernels* kernels, bool precise, const cpu::Int8Kernels* int8,
                         bool lm_head_precise)
    : cfg_(std::move(cfg)), w_(std::move(weights)), kv_(std::move(kv)), pool_(pool), k_(kernels), precise_(precise),
      k8_(int8), lm_head_precise_(lm_head_precise) {
  ENGINE_ASSERT(!w_->quant.int8 || k8_ != nullptr);
  scores_.resize(size_t(pool_->size()));
  busy_.resize(size_t(pool_->size()));
}

ModelRunner::Profile ModelRunner::profile() const {
  Profile p = prof_;
  for (const Busy& b : busy_) p.gemm_busy_ms += b.gemm, p.attention_busy_ms += b.attention;
  p.threads = pool_->size();
  return p;
}

size_t ModelRunner::act_bytes(int T, int K, bool int8, bool precise) const {
  return int8 ? cpu::act8_bytes(T, K, precise) : k_->act_bytes(T, K);
}

void ModelRunner::grow_scratch(int T) {
  const size_t H = size_t(cfg_.hidden_size), I = size_t(cfg_.intermediate_size), QD = size_t(cfg_.q_dim());
  const size_t KVD = size_t(cfg_.kv_dim()), D = size_t(cfg_.head_dim);
  const std::pair<AlignedVec<float>*, size_t> bufs[] = {{&x_, H},       {&xn_, H},      {&q_, QD},   {&attn_, QD},
                                                        {&k_new_, KVD}, {&v_new_, KVD}, {&gate_, I}, {&up_, I},
                                                        {&tmp_, H},     {&rope_cs_, D}};
  for (const auto& [v, width] : bufs)
    if (v->size() < size_t(T) * width) v->resize(size_t(T) * width);
}

void ModelRunner::reserve(int T) {
  grow_scratch(T);
  // The GEMM input of the widest K a step multiplies (hidden, q_dim for o_proj, intermediate for down),
  // in either layout when weights are int8 (the LM head may stay bf16).
  size_t act = 0;
  for (int K : {cfg_.hidden_size, cfg_.q_dim(), cfg_.intermediate_size}) {
    act = std::max(act, act_bytes(T, K, false, precise_));
    if (w_->quant.int8) act = std::max(act, act_bytes(T, K, true, precise_));
  }
  if (act_.size() < act) act_.resize(act);
}

void ModelRunner::rows(int T, int per_task, const std::function<void(int, int)>& fn) {
  const int tasks = (T + per_task - 1) / per_task;
  pool_->run(tasks, [&](int task, int) { fn(task * per_task, std::min(T, (task + 1) * per_task)); });
}

void ModelRunner::gemm(const float* x, int T, int K, bool precise, std::initializer_list<MatOut> outs,
                       const std::function<void(int, int)>& produce) {
  const bool int8 = outs.begin()->q != nullptr;
  cpu::Act a;
  a.M = T;
  a.K = K;
  a.Kp = int8 ? cpu::pad_k8(K) : cpu::pad_k(K);
  a.precise = precise;
  const size_t need = act_bytes(T, K, int8, precise);
  if (act_.size() < need) act_.resize(need);
  a.data = act_.data();
  const auto t_prep = Clock::now();
  rows(T, 16, [&](int m0, int m1) {
    if (produce) produce(m0, m1);
    if (int8) k8_->prepare_act(x, K, a, m0, m1);
    else k_->prepare_act(x, K, a, m0, m1);
  });
  prof_.prep_ms += std::chrono::duration<double, std::milli>(Clock::now() - t_prep).count();
  // Tasks: fixed-size slices of every weight matrix (kGemmRowsPerTask rows, or the kernels' own
  // choice), handed out dynamically; where the kernels ask for it, also slices of the input rows.
  int n_out = 0;
  for (const MatOut& o : outs) n_out += o.n;
  const int per_task = !int8 && k_->gemm_task_rows ? k_->gemm_task_rows(T, n_out, pool_->size()) : kGemmRowsPerTask;
  ENGINE_ASSERT(per_task > 0 && per_task % cpu::kPackRows == 0);
  const int per_m = !int8 && k_->gemm_task_m ? k_->gemm_task_m(T, K, n_out, pool_->size(), precise) : T;
  ENGINE_ASSERT(per_m >= T || (per_m > 0 && per_m % 32 == 0));
  struct Task {
    const MatOut* o;
    int n0, m0;
  };
  std::vector<Task> tasks;
  for (int m0 = 0; m0 < T; m0 += per_m)
    for (const MatOut& o : outs)
      for (int n = 0; n < o.n; n += per_task) tasks.push_back({&o, n, m0});
  pool_->run(int(tasks.size()), [&](int t, int worker) {
    const auto t0 = Clock::now();
    const Task& tk = tasks[size_t(t)];
    const MatOut& o = *tk.o;
    const int n1 = std::min(o.n, tk.n0 + per_task);
    if (int8) k8_->gemm(a, *o.q, o.n, tk.n0, n1, o.y, o.n);
    else if (per_m >= T) k_->gemm(a, o.w, o.n, tk.n0, n1, o.y, o.n);
    else
      k_->gemm(k_->act_rows(a, tk.m0, std::min(T, tk.m0 + per_m)), o.w, o.n, tk.n0, n1, o.y + size_t(tk.m0) * o.n, o.n);
    busy_[size_t(worker)].gemm += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  });
}

void ModelRunner::attention(int layer, const std::vector<SeqSlice>& batch, const std::vector<int>& row0) {
  cpu::AttnLayer L{kv_->k(layer),  kv_->v(layer),     kv_->bf16(),   kv_->block_size(),
                   cfg_.num_heads, cfg_.num_kv_heads, cfg_.head_dim, 1.0f / std::sqrt(float(cfg_.head_dim))};
  // q and P may be bf16 too (used with a bf16 cache): with bf16 activations, and on the int8 path,
  // whose accuracy is set by its quantized GEMMs (its default keeps an fp32 cache, which this leaves
  // on the fp32 attention).
  L.bf16_dot = !precise_ || k8_ != nullptr;
  struct Task {
    int slice, kvh, t0, t1;
  };
  std::vector<Task> tasks;
  for (int i = 0; i < int(batch.size()); ++i)
    for (int g = 0; g < cfg_.num_kv_heads; ++g)
      for (int t = 0; t < batch[size_t(i)].n_tokens; t += kAttnTokensPerTask)
        tasks.push_back({i, g, t, std::min(batch[size_t(i)].n_tokens, t + kAttnTokensPerTask)});
  const int qd = cfg_.q_dim();
  // Handed out last task first: a slice's later query tokens see more keys, so the costliest tasks
  // start first and the cheap ones fill the threads' ends (in order, a prefill's region ended on its
  // longest tasks).
  pool_->run(int(tasks.size()), [&](int ti, int worker) {
    const auto t0 = Clock::now();
    const Task& tk = tasks[tasks.size() - 1 - size_t(ti)];
    const SeqSlice& s = batch[size_t(tk.slice)];
    std::vector<float>& sc = scores_[size_t(worker)];
    const size_t need = cpu::attention_scratch(L, s.start_pos + tk.t1);
    if (sc.size() < need) sc.resize(need);
    cpu::AttnSeq as{q_.data() + size_t(row0[size_t(tk.slice)]) * qd, attn_.data() + size_t(row0[size_t(tk.slice)]) * qd,
                    s.n_tokens, s.start_pos, s.block_table};
    k_->attention(L, as, tk.kvh, tk.t0, tk.t1, sc.data());
    busy_[size_t(worker)].attention += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  });
}

Status ModelRunner::copy_blocks(const std::vector<std::pair<int, int>>& src_dst) {
  const size_t eb = kv_->elem_bytes();
  const size_t tile = size_t(cfg_.num_kv_heads) * size_t(kv_->block_size()) * size_t(cfg_.head_dim) * eb;
  for (int l = 0; l < cfg_.num_layers; ++l)
    for (const auto& [src, dst] : src_dst) {
      auto* k = static_cast<uint8_t*>(kv_->k(l));
      auto* v = static_cast<uint8_t*>(kv_->v(l));
      std::memcpy(k + kv_->tile(dst, 0) * eb, k + kv_->tile(src, 0) * eb, tile);
      std::memcpy(v + kv_->tile(dst, 0) * eb, v + kv_->tile(src, 0) * eb, tile);
    }
  return Status::ok();
}

Status ModelRunner::forward(const std::vector<SeqSlice>& batch, std::vector<float>& logits) {
  if (Status st = validate_batch(cfg_, kv_->num_blocks(), kv_->block_size(), batch); !st.is_ok()) return st;
  const int H = cfg_.hidden_size, I = cfg_.intermediate_size, QD = cfg_.q_dim(), KVD = cfg_.kv_dim();
  const int D = cfg_.head_dim, bs = kv_->block_size();
  // Row layout: slices back to back; row0[i] is slice i's first row; pos[r] is row r's position.
  std::vector<int> row0(batch.size()), pos;
  std::vector<const SeqSlice*> row_slice;
  int T = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    row0[i] = T;
    for (int t = 0; t < batch[i].n_tokens; ++t) {
      pos.push_back(batch[i].start_pos + t);
      row_slice.push_back(&batch[i]);
    }
    T += batch[i].n_tokens;
  }
  grow_scratch(T);

  auto clk = Clock::now();
  // A layer GEMM's time: its matrix group's timer and the GEMM total.
  auto lap_gemm = [this](Clock::time_point& t, double& group) {
    const double before = group;
    lap(t, group);
    prof_.gemm_ms += group - before;
  };
  // A part of other_ms: its own timer and other_ms.
  auto lap_other = [this](Clock::time_point& t, double& part) {
    const double before = part;
    lap(t, part);
    prof_.other_ms += part - before;
  };
  prof_.steps++;
  prof_.tokens += uint64_t(T);
  // Embedding lookup; each row's RoPE angles.
  rows(T, 32, [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r) {
      const SeqSlice& s = *row_slice[size_t(r)];
      int tok = s.tokens[pos[size_t(r)] - s.start_pos];
      cpu::unpack_row(w_->embed_tokens, cfg_.vocab_size, H, tok, x_.data() + size_t(r) * H);
      rope_angles(cfg_, pos[size_t(r)], rope_cs_.data() + size_t(r) * D);
    }
  });
  lap_other(clk, prof_.embed_ms);

  const bool i8 = w_->quant.int8;
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& Lw = w_->layers[size_t(l)];
    // One matrix of this layer as a GEMM output, int8 or bf16 as loaded.
    auto out = [i8](const bf16_t* w, const cpu::QMatrix& q, int n, AlignedVec<float>& y) {
      return MatOut{i8 ? nullptr : w, i8 ? &q : nullptr, n, y.data()};
    };
    // The input norm runs inside the GEMM's activation preparation (per 16 rows).
    gemm(xn_.data(), T, H, precise_,
         {out(Lw.q_proj, Lw.i8.q_proj, QD, q_), out(Lw.k_proj, Lw.i8.k_proj, KVD, k_new_),
          out(Lw.v_proj, Lw.i8.v_proj, KVD, v_new_)},
         [&](int r0, int r1) {
           for (int r = r0; r < r1; ++r)
             k_->rmsnorm(x_.data() + size_t(r) * H, Lw.input_norm, cfg_.rms_norm_eps, H, xn_.data() + size_t(r) * H);
         });
    lap_gemm(clk, prof_.gemm_qkv_ms);
    // RoPE on q and k, then K/V into the cache at each row's (block, slot).
    void* kc = kv_->k(l);
    void* vc = kv_->v(l);
    const bool kv_bf16 = kv_->bf16();
    rows(T, 16, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) {
        const int p = pos[size_t(r)];
        const float* cs = rope_cs_.data() + size_t(r) * D;
        rope_apply(cfg_, cs, q_.data() + size_t(r) * QD, cfg_.num_heads);
        float* kr = k_new_.data() + size_t(r) * KVD;
        rope_apply(cfg_, cs, kr, cfg_.num_kv_heads);
        const SeqSlice& s = *row_slice[size_t(r)];
        const int block = s.block_table[p / bs], slot = p % bs;
        for (int g = 0; g < cfg_.num_kv_heads; ++g) {
          const float* kg = kr + size_t(g) * D;
          const float* vg = v_new_.data() + size_t(r) * KVD + size_t(g) * D;
          const size_t kt = kv_->tile(block, g) + slot;  // K^T: column `slot`
          const size_t vt = kv_->tile(block, g) + size_t(slot) * D;
          if (kv_bf16) {  // rounded to nearest even, as torch's .to(torch.bfloat16)
            for (int d = 0; d < D; ++d) static_cast<bf16_t*>(kc)[kt + size_t(d) * bs] = f32_to_bf16(kg[d]);
            for (int d = 0; d < D; ++d) static_cast<bf16_t*>(vc)[vt + size_t(d)] = f32_to_bf16(vg[d]);
          } else {
            for (int d = 0; d < D; ++d) static_cast<float*>(kc)[kt + size_t(d) * bs] = kg[d];
            std::memcpy(static_cast<float*>(vc) + vt, vg, sizeof(float) * D);
          }
        }
      }
    });
    lap_other(clk, prof_.rope_kv_ms);
    attention(l, batch, row0);
    lap(clk, prof_.attention_ms);
    gemm(attn_.data(), T, QD, precise_, {out(Lw.o_proj, Lw.i8.o_proj, H, tmp_)});
    lap_gemm(clk, prof_.gemm_o_ms);
    // The residual and the post-attention norm run inside the GEMM's activation preparation.
    gemm(xn_.data(), T, H, precise_,
         {out(Lw.gate_proj, Lw.i8.gate_proj, I, gate_), out(Lw.up_proj, Lw.i8.up_proj, I, up_)}, [&](int r0, int r1) {
           for (int r = r0; r < r1; ++r) {
             k_->add_inplace(x_.data() + size_t(r) * H, tmp_.data() + size_t(r) * H, H);
             k_->rmsnorm(x_.data() + size_t(r) * H, Lw.post_attn_norm, cfg_.rms_norm_eps, H,
                         xn_.data() + size_t(r) * H);
           }
         });
    lap_gemm(clk, prof_.gemm_gate_up_ms);
    // silu(gate) * up runs inside the GEMM's activation preparation.
    gemm(gate_.data(), T, I, precise_, {out(Lw.down_proj, Lw.i8.down_proj, H, tmp_)}, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r)
        k_->silu_mul(gate_.data() + size_t(r) * I, up_.data() + size_t(r) * I, I, gate_.data() + size_t(r) * I);
    });
    lap_gemm(clk, prof_.gemm_down_ms);
    rows(T, 32, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) k_->add_inplace(x_.data() + size_t(r) * H, tmp_.data() + size_t(r) * H, H);
    });
    lap_other(clk, prof_.residual_ms);
  }

  // Final norm and lm_head for the rows that want logits.
  std::vector<int> out_rows;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].logits == SeqSlice::kAll)
      for (int t = 0; t < batch[i].n_tokens; ++t) out_rows.push_back(row0[i] + t);
    else if (batch[i].logits == SeqSlice::kLast) out_rows.push_back(row0[i] + batch[i].n_tokens - 1);
  }
  const int R = int(out_rows.size());
  logits.resize(size_t(R) * cfg_.vocab_size);
  if (R == 0) {
    lap(clk, prof_.other_ms);
    return Status::ok();
  }
  for (int i = 0; i < R; ++i)
    k_->rmsnorm(x_.data() + size_t(out_rows[size_t(i)]) * H, w_->final_norm, cfg_.rms_norm_eps, H,
                xn_.data() + size_t(i) * H);
  lap(clk, prof_.other_ms);
  if (w_->quant.lm_head_int8)
    gemm(xn_.data(), R, H, lm_head_precise_, {{nullptr, &w_->lm_head8, cfg_.vocab_size, logits.data()}});
  else gemm(xn_.data(), R, H, lm_head_precise_, {{w_->lm_head, nullptr, cfg_.vocab_size, logits.data()}});
  lap(clk, prof_.lm_head_ms);
  return Status::ok();
}

}  // namespace ee
