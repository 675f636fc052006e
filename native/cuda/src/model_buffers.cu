// The model's step buffers: activations, attention partials, step metadata (device and pinned
// host), argmax / sampling / logits outputs. Sized up front by create_model, grown by ensure()
// when a step needs more; graphs captured on the old buffers are dropped with them.
#include <algorithm>

#include "model.h"

void EeCudaModel::drop_graphs() {
  for (auto& [k, g] : graphs) cudaGraphExecDestroy(g);
  graphs.clear();
}

void EeCudaModel::free_buffers() {
  for (void* p : {(void*)x, (void*)y, (void*)q, (void*)part_acc, (void*)part_ml, (void*)ylog, (void*)act, (void*)meta,
                  (void*)argmax_d, (void*)argmax_keys, (void*)sample_d, (void*)mask_d, (void*)logits_d})
    if (p) cudaFree(p);
  for (void* p : {(void*)meta_h, (void*)argmax_h, (void*)sample_h, (void*)mask_h, (void*)logits_h})
    if (p) cudaFreeHost(p);
  x = y = q = part_acc = part_ml = ylog = logits_d = logits_h = nullptr;
  act = nullptr;
  meta = meta_h = argmax_d = argmax_h = nullptr;
  argmax_keys = nullptr;
  sample_d = sample_h = nullptr;
  mask_d = mask_h = nullptr;
}

void EeCudaModel::ensure(int t, int r, size_t rp, int bt, bool want_logits) {
  const bool grow = t > cap_t || r > cap_r || rp > cap_rp || bt > cap_bt;
  const bool grow_l = want_logits && r > cap_rl;
  if (!grow && !grow_l) return;
  std::lock_guard<std::recursive_mutex> lock(eec::api_mutex());
  CK(cudaStreamSynchronize(st));
  drop_graphs();
  if (grow) {
    cap_t = std::max(cap_t, t);
    cap_r = std::max(cap_r, r);
    cap_rp = std::max(cap_rp, rp);
    cap_bt = std::max(cap_bt, bt);
  }
  if (want_logits) cap_rl = std::max(std::max(cap_rl, r), cap_r);
  cap_rl = std::min(cap_rl, cap_r);
  free_buffers();
  const size_t T = size_t(cap_t), R = size_t(cap_r);
  x = eec::dalloc<float>(T * H);
  act = eec::dalloc<bf16>(2 * T * size_t(std::max({H, QD, I})));
  y = eec::dalloc<float>(2 * T * size_t(std::max({QKVW, H, 2 * I})));
  q = eec::dalloc<float>(T * QD);
  part_acc = eec::dalloc<float>(std::max<size_t>(cap_rp, 1) * QD);
  part_ml = eec::dalloc<float>(std::max<size_t>(cap_rp, 1) * size_t(d.heads) * 2);
  ylog = eec::dalloc<float>(2 * R * V);
  meta = eec::dalloc<int32_t>(size_t(meta_ints()));
  meta_h = eec::halloc<int32_t>(size_t(meta_ints()));
  argmax_d = eec::dalloc<int32_t>(R);
  argmax_keys = eec::dalloc<unsigned long long>(R);
  sample_d = eec::dalloc<eec::SampleParams>(R);
  sample_h = eec::halloc<eec::SampleParams>(R);
  mask_d = eec::dalloc<uint32_t>(R * size_t(mask_words()));
  mask_h = eec::halloc<uint32_t>(R * size_t(mask_words()));
  argmax_h = eec::halloc<int32_t>(R);
  if (cap_rl > 0) {
    logits_d = eec::dalloc<float>(size_t(cap_rl) * V);
    logits_h = eec::halloc<float>(size_t(cap_rl) * V);
  }
}
