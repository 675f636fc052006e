// One step of the model (eec::forward): the step's metadata packed for its rows and uploaded in
// one copy, then its graph replayed or its forward run eagerly, then the logits or token ids
// copied back. A sampled step asks for its rows' parameters (and grammar masks) only once the forward
// is queued: the caller's wait for masks overlaps the GPU's forward; the sampling kernel follows.
#include <algorithm>
#include <cstring>
#include <string>

#include "model_graphs.h"

namespace eec {

void forward(EeCudaModel& m, const EeCudaSlice* s, int n, float* logits, int32_t* argmax_out, EeCudaSampleFill fill,
             void* fill_ctx) {
  const auto t_host = Clock::now();
  const bool want_argmax = argmax_out != nullptr;
  const auto mode = fill          ? EeCudaModel::Out::kSample
                    : want_argmax ? EeCudaModel::Out::kArgmax
                                  : EeCudaModel::Out::kLogits;
  int T = 0, R = 0, BT = 0, max_ctx = 0;
  bool decode = n > 0;
  for (int i = 0; i < n; ++i) {
    T += s[i].n_tokens;
    R += s[i].logits == 2 ? s[i].n_tokens : s[i].logits == 1 ? 1 : 0;
    BT += s[i].n_blocks;
    max_ctx = std::max(max_ctx, s[i].start_pos + s[i].n_tokens);
    decode = decode && s[i].n_tokens == 1 && s[i].logits == 1;
  }
  if (m.prof.on) {  // profile labels only: no string work on the serving path
    m.shape = decode ? "decode" : "mixed";
    if (m.prof.ops) m.shape += "." + std::to_string(row_bucket(T));
  }
  // Three kinds of step:
  // - decode graph: every slice one token with logits; B = bucket(n) rows, padded rows are one-row
  //   attention tiles on the scratch block.
  // - mixed graph: prefill chunks beside decodes, padded to B = mixed_bucket(T) rows and RB logit
  //   rows; the attention grids are sized for the most tiles such a step can have (blocks past the
  //   step's counts exit) and padded rows are in no tile. Captured once per (B, RB, output mode), so
  //   no step pays cuBLAS's per-shape host work or ~200 eager launches, which dominated eager mixed
  //   steps (native/cuda/README.md, "CUDA graphs").
  // - eager: prompt-logprob steps (logits for every row), --enforce-eager, the op profiler.
  const int max_seqs = std::max(1, m.d.max_num_seqs);
  bool all_rows = false;  // a slice wants logits for every row
  for (int i = 0; i < n; ++i) all_rows = all_rows || s[i].logits == 2;
  const bool may_graph = !m.d.enforce_eager && !m.prof.ops && n <= max_seqs && max_ctx <= m.d.max_model_len;
  const bool graph = decode && may_graph;
  const bool mgraph = !decode && n > 0 && !all_rows && may_graph && mixed_bucket(T) <= m.cap_t;
  const GraphPlan gp = graph || mgraph ? plan_graph(m, mgraph, graph ? bucket(n) : mixed_bucket(T)) : GraphPlan{};
  const int B = graph || mgraph ? gp.B : T;  // rows actually run
  const int RR = graph || mgraph ? gp.SR : R;
  // One-row slices (decodes) become one-row attention tiles split into key partitions; longer
  // slices (prefill chunks) tiles of up to qt rows, one partition each.
  int n_dec = 0, dec_ctx = 0;
  for (int i = 0; i < n; ++i)
    if (s[i].n_tokens == 1) {
      ++n_dec;
      dec_ctx = std::max(dec_ctx, s[i].start_pos + 1);
    }
  const int qt = eec::attn_rows_per_tile(m.d.heads, m.d.kv_heads);
  // The attention grids: decode tiles (rows the partitions are sized for) and prefill tiles.
  const int dec_grid = graph || mgraph ? gp.dec_grid : n_dec;
  const int part_keys = graph || mgraph ? gp.part_keys : eec::attn_decode_part_keys(dec_grid, m.walk);
  const int np = graph || mgraph ? gp.np : (dec_ctx + part_keys - 1) / part_keys;
  m.ensure(B, std::max(RR, 1), np > 1 ? size_t(dec_grid) * size_t(np) : 0, BT + 1, !want_argmax);

  const int S = B, SR = std::max(RR, 1);
  const eec::RowMeta hm = EeCudaModel::row_meta(m.meta_h, S, SR);
  int32_t* tok = const_cast<int32_t*>(hm.token);
  int32_t* pos = const_cast<int32_t*>(hm.pos);
  int32_t* slot = const_cast<int32_t*>(hm.slot);
  int32_t* bt_off = const_cast<int32_t*>(hm.bt_off);
  int32_t* tile_row = const_cast<int32_t*>(hm.tile_row);
  int32_t* tile_n = const_cast<int32_t*>(hm.tile_n);
  int32_t* out_row = const_cast<int32_t*>(hm.out_row);
  int32_t* counts = const_cast<int32_t*>(hm.counts);
  int32_t* bt = const_cast<int32_t*>(hm.bt);
  int row = 0, out = 0, bt_at = 0, dec_tiles = 0;
  int pre_tiles = 0;  // written after the decode tiles, once those are counted
  for (int i = 0, r = 0; i < n; r += s[i].n_tokens, ++i)
    if (s[i].n_tokens == 1) {
      tile_row[dec_tiles] = r;
      tile_n[dec_tiles++] = 1;
    }
  for (int i = 0, r = 0; i < n; r += s[i].n_tokens, ++i)
    for (int t = 0; s[i].n_tokens > 1 && t < s[i].n_tokens; t += qt, ++pre_tiles) {
      tile_row[dec_tiles + pre_tiles] = r + t;
      tile_n[dec_tiles + pre_tiles] = std::min(qt, s[i].n_tokens - t);
    }
  for (int i = 0; i < n; ++i) {
    std::memcpy(bt + bt_at, s[i].block_table, sizeof(int32_t) * size_t(s[i].n_blocks));
    for (int t = 0; t < s[i].n_tokens; ++t, ++row) {
      const int p = s[i].start_pos + t;
      tok[row] = s[i].tokens[t];
      pos[row] = p;
      slot[row] = s[i].block_table[p / m.bs] * m.bs + p % m.bs;
      bt_off[row] = bt_at;
      if (s[i].logits == 2 || (s[i].logits == 1 && t == s[i].n_tokens - 1)) out_row[out++] = row;
    }
    bt_at += s[i].n_blocks;
  }
  bt[bt_at] = m.num_blocks;  // the scratch block, for padded rows
  for (; row < B; ++row) {
    tok[row] = 0;
    pos[row] = 0;
    slot[row] = m.num_blocks * m.bs;
    bt_off[row] = bt_at;
    if (graph) {
      out_row[out++] = row;
      tile_row[dec_tiles] = row;  // padded decode-graph rows: one-row tiles after the real ones
      tile_n[dec_tiles++] = 1;
    }
  }
  for (; out < SR; ++out) out_row[out] = 0;  // padded logit rows of a mixed graph (never read)
  counts[0] = dec_tiles;
  counts[1] = pre_tiles;
  m.cur = EeCudaModel::row_meta(m.meta, S, SR);
  CK(cudaMemcpyAsync(m.meta, m.meta_h, sizeof(int32_t) * size_t(EeCudaModel::meta_len(S, SR, bt_at + 1)),
                     cudaMemcpyHostToDevice, m.st));

  const auto t_launch = Clock::now();
  m.prof.step_begin(m.st);
  cudaGraphExec_t exec = graph || mgraph ? graph_for(m, gp, mode, true) : nullptr;
  if (exec) {
    m.prof.begin(m.st);
    CK(cudaGraphLaunch(exec, m.st));
    if (m.prof.on) m.prof.end(m.st, (mgraph ? "graph.mixed." : "graph.") + std::to_string(B));
    ++m.graph_steps;
  } else if (graph || mgraph) {  // the plan's step without its graph (its capture failed); m.cur is its layout
    m.run(gp.B, gp.SR, gp.dec_grid, gp.pre_grid, gp.part_keys, gp.np, mode);
    ++m.eager_steps;
  } else {
    m.run(T, R, dec_tiles, pre_tiles, part_keys, np, mode);
    ++m.eager_steps;
  }
  if (fill && R > 0) {  // RR >= R rows sampled; padded graph rows sample greedily (their ids are never read)
    std::vector<EeCudaSample>& sampling = m.sample_fill;
    sampling.assign(size_t(R), EeCudaSample{});
    const size_t W = size_t(m.mask_words());
    fill(fill_ctx, sampling.data(), R, m.mask_h, int(W));
    int mask_rows = 0;  // rows [0, mask_rows) are uploaded: up to the last masked one
    for (int i = 0; i < RR; ++i) {
      eec::SampleParams& p = m.sample_h[i];
      p = eec::SampleParams{};
      if (i < R) {
        p.temperature = sampling[size_t(i)].temperature;
        p.top_p = sampling[size_t(i)].top_p;
        p.min_p = sampling[size_t(i)].min_p;
        p.u = sampling[size_t(i)].u;
        p.top_k = sampling[size_t(i)].top_k;
        p.n_ban = std::min(std::max(sampling[size_t(i)].n_ban, 0), EE_CUDA_MAX_BANS);
        for (int b = 0; b < p.n_ban; ++b) p.ban[b] = sampling[size_t(i)].ban[b];
        if (sampling[size_t(i)].masked) {
          p.masked = 1;
          mask_rows = i + 1;
        }
      }
    }
    CK(cudaMemcpyAsync(m.sample_d, m.sample_h, sizeof(eec::SampleParams) * size_t(RR), cudaMemcpyHostToDevice, m.st));
    if (mask_rows > 0) {  // beside the forward, if it still runs (mask_d's last reader synchronised with the last step)
      CK(cudaMemcpyAsync(m.mask_d, m.mask_h, sizeof(uint32_t) * W * size_t(mask_rows), cudaMemcpyHostToDevice,
                         m.st_masks));
      CK(cudaEventRecord(m.masks_up, m.st_masks));
      CK(cudaStreamWaitEvent(m.st, m.masks_up, 0));
    }
    if (m.prof.ops) m.prof.begin(m.st);
    eec::sample(m.ylog, RR, m.V, m.planes, m.sample_d, m.mask_d, m.argmax_d, m.st);
    if (m.prof.ops) m.prof.end(m.st, "logits." + m.shape);
    CK(cudaGetLastError());
  }
  const auto t_launched = Clock::now();
  m.prof.step_end(m.st);
  if (R > 0) {
    if (want_argmax)
      CK(cudaMemcpyAsync(m.argmax_h, m.argmax_d, sizeof(int32_t) * size_t(R), cudaMemcpyDeviceToHost, m.st));
    else CK(cudaMemcpyAsync(m.logits_h, m.logits_d, sizeof(float) * size_t(R) * m.V, cudaMemcpyDeviceToHost, m.st));
  }
  CK(cudaStreamSynchronize(m.st));
  const auto t_done = Clock::now();
  if (m.prof.steps)
    m.prof.step(m.shape + (graph || mgraph ? "(g)." : ".") + std::to_string(row_bucket(B)), B,
                ms_between(t_host, t_launch), ms_between(t_launch, t_launched), ms_between(t_host, t_done));
  else if (m.prof.on) m.prof.host("forward_call." + m.shape, ms_between(t_host, t_done));
  if (R > 0) {
    if (want_argmax) std::memcpy(argmax_out, m.argmax_h, sizeof(int32_t) * size_t(R));
    else std::memcpy(logits, m.logits_h, sizeof(float) * size_t(R) * m.V);
  }
}

}  // namespace eec
