// The C ABI of include/ernie_cuda.h: every entry point turns exceptions into an error message and
// a status; model creation, destruction, buffer growth and info hold api_mutex (model.h).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model.h"

std::recursive_mutex& eec::api_mutex() {
  static std::recursive_mutex m;
  return m;
}

namespace {

void set_err(char* err, int errlen, const std::string& msg) {
  if (err && errlen > 0) std::snprintf(err, size_t(errlen), "%s", msg.c_str());
}

}  // namespace

extern "C" {

int ee_cuda_abi_version(void) { return EE_CUDA_ABI_VERSION; }

int ee_cuda_device_count(char* err, int errlen) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    set_err(err, errlen, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
    return 0;
  }
  if (n == 0) set_err(err, errlen, "no CUDA device");
  return n;
}

EeCudaModel* ee_cuda_create(const EeCudaModelDesc* desc, char* err, int errlen) {
  std::lock_guard<std::recursive_mutex> lock(eec::api_mutex());
  auto* m = new EeCudaModel();
  try {
    eec::create_model(*m, *desc);
    return m;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    eec::destroy_model(m);
    delete m;
    return nullptr;
  }
}

void ee_cuda_destroy(EeCudaModel* m) {
  if (!m) return;
  std::lock_guard<std::recursive_mutex> lock(eec::api_mutex());
  eec::destroy_model(m);
  delete m;
}

int ee_cuda_info(EeCudaModel* m, EeCudaInfo* out) {
  std::memset(out, 0, sizeof(*out));
  out->num_blocks = m->num_blocks;
  out->kv_bytes = m->kv_bytes;
  out->weight_bytes = m->weight_bytes;
  size_t f = 0, t = 0;
  std::lock_guard<std::recursive_mutex> lock(eec::api_mutex());
  if (cudaMemGetInfo(&f, &t) == cudaSuccess) {
    out->gpu_bytes_used = t - f;
    out->gpu_bytes_total = t;
  }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, m->d.device) == cudaSuccess)
    std::snprintf(out->device_name, sizeof(out->device_name), "%s", p.name);
  return 0;
}

int ee_cuda_forward(EeCudaModel* m, const EeCudaSlice* slices, int n, float* logits, int32_t* argmax,
                    EeCudaSampleFill fill, void* fill_ctx, char* err, int errlen) {
  try {
    if ((logits == nullptr) == (argmax == nullptr)) throw std::runtime_error("exactly one of logits / argmax");
    if (fill && !argmax) throw std::runtime_error("sampling writes ids: pass argmax");
    eec::forward(*m, slices, n, logits, argmax, fill, fill_ctx);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, std::string("CUDA forward: ") + e.what());
    return 1;
  }
}

int ee_cuda_copy_blocks(EeCudaModel* m, const int32_t* src, const int32_t* dst, int n, char* err, int errlen) {
  try {
    if (n <= 0) return 0;
    if (n > m->cap_pairs) {
      std::lock_guard<std::recursive_mutex> lock(eec::api_mutex());
      if (m->pairs) CK(cudaFree(m->pairs));
      m->pairs = eec::dalloc<int32_t>(size_t(2 * n));
      m->cap_pairs = n;
    }
    std::vector<int32_t> pairs(size_t(2 * n));
    for (int i = 0; i < n; ++i) {
      pairs[size_t(2 * i)] = src[i];
      pairs[size_t(2 * i + 1)] = dst[i];
    }
    CK(cudaMemcpyAsync(m->pairs, pairs.data(), pairs.size() * 4, cudaMemcpyHostToDevice, m->st));
    const size_t block_bytes = size_t(m->bs) * size_t(m->KVD) * (m->kv_bf16 ? 2 : 4);
    for (int l = 0; l < m->L; ++l) {
      eec::copy_blocks(m->kc(l), m->pairs, n, block_bytes, m->st);
      eec::copy_blocks(m->vc(l), m->pairs, n, block_bytes, m->st);
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(m->st));
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, std::string("CUDA copy_blocks: ") + e.what());
    return 1;
  }
}

void ee_cuda_graph_stats(EeCudaModel* m, uint64_t* graph_steps, uint64_t* eager_steps, uint64_t* captures) {
  *graph_steps = m->graph_steps;
  *eager_steps = m->eager_steps;
  *captures = m->captures;
}

}  // extern "C"
