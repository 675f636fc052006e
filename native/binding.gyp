# Native engine build, run by `npm ci` (package.json "install": node-gyp rebuild -C native).
# Kernels are compiled once per ISA into their own static libraries (their -m flags must not leak
# into the rest); the addon picks one at run time, so one build runs on any x86-64 with AVX2.
{
  "target_defaults": {
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-fno-rtti"],
    "cflags_cc": ["-std=c++20", "-O3", "-fPIC", "-fexceptions", "-Wall", "-Wno-unused-function"],
    "include_dirs": ["src", "cuda/include", "<!(node -p \"require('node-addon-api').include_dir\")"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
  },
  "targets": [
    {
      "target_name": "kernels_avx512",
      "type": "static_library",
      "sources": ["src/cpu/kernels_avx512.cc", "src/cpu/qgemm_avx512.cc"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512bf16", "-mavx512vnni", "-mfma",
                    "-mf16c", "-Wno-uninitialized", "-Wno-maybe-uninitialized"],
    },
    {
      # The only AMX code; its flags stay here so nothing else can emit tile instructions.
      "target_name": "kernels_amx",
      "type": "static_library",
      "sources": ["src/cpu/amx.cc"],
      "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512bf16", "-mavx512vnni", "-mfma",
                    "-mf16c", "-mamx-tile", "-mamx-bf16", "-mamx-int8", "-Wno-maybe-uninitialized"],
    },
    {
      "target_name": "kernels_avxvnni",
      "type": "static_library",
      "sources": ["src/cpu/qgemm_avxvnni.cc"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni"],
    },
    {
      "target_name": "kernels_avx2",
      "type": "static_library",
      "sources": ["src/cpu/kernels_avx2.cc", "src/cpu/qgemm_avx2.cc"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c"],
    },
    {
      "target_name": "ernie_native",
      "dependencies": ["kernels_avx512", "kernels_amx", "kernels_avxvnni", "kernels_avx2"],
      "sources": [
        "src/binding/addon.cc",
        "src/binding/engine_wrap.cc",
        "src/binding/gemm_check.cc",
        "src/binding/qgemm_check.cc",
        "src/binding/load_options.cc",
        "src/binding/membw.cc",
        "src/binding/model_wrap.cc",
        "src/common/thread_pool.cc",
        "src/cpu/kernels.cc",
        "src/cpu/qgemm.cc",
        "src/engine/block_pool.cc",
        "src/engine/engine.cc",
        "src/engine/grammar_bell.cc",
        "src/engine/prompt_logprobs.cc",
        "src/engine/fair_share.cc",
        "src/engine/kv_manager.cc",
        "src/engine/sampler.cc",
        "src/engine/scheduler.cc",
        "src/formula/formula.cc",
        "src/model/kv_cache.cc",
        "src/model/mapped_file.cc",
        "src/model/cuda_runner.cc",
        "src/model/model_runner.cc",
        "src/model/runner.cc",
        "src/model/weights.cc",
      ],
      "libraries": ["-lpthread", "-ldl"],
    },
  ],
}
