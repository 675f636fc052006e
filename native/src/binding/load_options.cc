#include "binding/load_options.h"

#include <thread>

namespace ee {

// A field the TS plan (src/sidecar/engine/plan.ts) always sets: its defaults live there alone, so a
// caller that leaves one out is a bug, not a request for a second default.
static int required_int(const Napi::Object& o, const char* k) {
  Napi::Value v = o.Get(k);
  if (!v.IsNumber())
    throw Napi::TypeError::New(o.Env(), std::string("load options: ") + k + " is required (planEngine sets it)");
  return v.As<Napi::Number>().Int32Value();
}

int get_int(const Napi::Object& o, const char* k, int dflt) {
  Napi::Value v = o.Get(k);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : dflt;
}

float get_float(const Napi::Object& o, const char* k, float dflt) {
  Napi::Value v = o.Get(k);
  return v.IsNumber() ? v.As<Napi::Number>().FloatValue() : dflt;
}

LoadOptions parse_load_options(const Napi::Object& o) {
  LoadOptions r;
  Napi::Object c = o.Get("config").As<Napi::Object>();
  ModelConfig& cfg = r.config;
  cfg.vocab_size = get_int(c, "vocabSize", 0);
  cfg.hidden_size = get_int(c, "hiddenSize", 0);
  cfg.intermediate_size = get_int(c, "intermediateSize", 0);
  cfg.num_layers = get_int(c, "numLayers", 0);
  cfg.num_heads = get_int(c, "numHeads", 0);
  cfg.num_kv_heads = get_int(c, "numKvHeads", 0);
  cfg.head_dim = get_int(c, "headDim", 0);
  cfg.rms_norm_eps = c.Get("rmsNormEps").As<Napi::Number>().FloatValue();
  cfg.tie_word_embeddings = c.Get("tieWordEmbeddings").As<Napi::Boolean>().Value();
  cfg.rope_interleaved = c.Get("ropeInterleaved").As<Napi::Boolean>().Value();
  Napi::Float32Array inv = c.Get("invFreq").As<Napi::Float32Array>();
  cfg.inv_freq.assign(inv.Data(), inv.Data() + inv.ElementLength());

  Napi::Array ts = o.Get("tensors").As<Napi::Array>();
  for (uint32_t i = 0; i < ts.Length(); ++i) {
    Napi::Object t = ts.Get(i).As<Napi::Object>();
    TensorSource s;
    s.name = t.Get("name").As<Napi::String>().Utf8Value();
    s.path = t.Get("path").As<Napi::String>().Utf8Value();
    std::string dt = t.Get("dtype").As<Napi::String>().Utf8Value();
    s.dtype = dt == "BF16" ? DType::BF16 : dt == "F16" ? DType::F16 : DType::F32;
    Napi::Array shape = t.Get("shape").As<Napi::Array>();
    for (uint32_t d = 0; d < shape.Length(); ++d) s.shape.push_back(shape.Get(d).As<Napi::Number>().Int64Value());
    s.offset = uint64_t(t.Get("offset").As<Napi::Number>().Int64Value());
    s.nbytes = uint64_t(t.Get("nbytes").As<Napi::Number>().Int64Value());
    r.tensors.push_back(std::move(s));
  }
  r.threads = get_int(o, "threads", 0);
  if (r.threads <= 0) r.threads = int(std::thread::hardware_concurrency());
  r.kv_blocks = get_int(o, "kvBlocks", 0);
  r.block_size = required_int(o, "blockSize");
  if (o.Has("isa") && o.Get("isa").IsString()) r.isa = o.Get("isa").As<Napi::String>().Utf8Value();
  if (o.Has("precise") && o.Get("precise").IsBoolean()) r.precise = o.Get("precise").As<Napi::Boolean>().Value();
  if (o.Has("lmHeadPrecise") && o.Get("lmHeadPrecise").IsBoolean())
    r.lm_head_precise = o.Get("lmHeadPrecise").As<Napi::Boolean>().Value() ? 1 : 0;
  auto str = [&](const char* k, std::string& out) {
    if (o.Has(k) && o.Get(k).IsString()) out = o.Get(k).As<Napi::String>().Utf8Value();
  };
  str("device", r.device);
  str("cudaLibrary", r.cuda_library);
  str("kvCacheDtype", r.kv_cache_dtype);
  str("quantization", r.quantization);
  if (o.Has("lmHeadInt8") && o.Get("lmHeadInt8").IsBoolean())
    r.lm_head_int8 = o.Get("lmHeadInt8").As<Napi::Boolean>().Value();
  if (o.Has("gpuMemoryUtilization") && o.Get("gpuMemoryUtilization").IsNumber())
    r.gpu_memory_utilization = o.Get("gpuMemoryUtilization").As<Napi::Number>().FloatValue();
  if (o.Has("enforceEager") && o.Get("enforceEager").IsBoolean())
    r.enforce_eager = o.Get("enforceEager").As<Napi::Boolean>().Value();
  if (o.Has("captureGraphs") && o.Get("captureGraphs").IsBoolean())
    r.capture_graphs = o.Get("captureGraphs").As<Napi::Boolean>().Value();
  r.max_model_len = required_int(o, "maxModelLen");
  r.max_num_seqs = required_int(o, "maxNumSeqs");
  r.max_batched_tokens = required_int(o, "maxNumBatchedTokens");
  return r;
}

}  // namespace ee
