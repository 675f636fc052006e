/* The C ABI of libernie_cuda.so, the CUDA model runner. The Node addon never links CUDA: it
 * dlopen()s this library when the device is "cuda" (src/model/cuda_runner.cc) and resolves these
 * symbols by name. Plain C types only; no CUDA header is needed to include this. Every function
 * that can fail returns 0 on success, or nonzero and writes a message into err[errlen]. */
#ifndef ERNIE_CUDA_H
#define ERNIE_CUDA_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EE_CUDA_ABI_VERSION 7

typedef struct EeCudaModel EeCudaModel;

/* The model and its host-side weights (bf16 row-major [out, in] as in the checkpoint, norms fp32).
 * Per-layer arrays have `layers` entries. The library copies everything it needs to the GPU. */
typedef struct {
  int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim;
  float rms_norm_eps;
  int rope_interleaved;             /* 1: pairs (2i, 2i+1) (ERNIE-4.5); 0: halves (Llama) */
  const float* inv_freq;            /* head_dim / 2 */
  const uint16_t* embed;            /* [vocab, hidden] */
  const uint16_t* lm_head;          /* [vocab, hidden]; may equal embed (tied) */
  const float* final_norm;          /* [hidden] */
  const uint16_t* const* q_proj;    /* [heads*head_dim, hidden] */
  const uint16_t* const* k_proj;    /* [kv_heads*head_dim, hidden] */
  const uint16_t* const* v_proj;    /* [kv_heads*head_dim, hidden] */
  const uint16_t* const* o_proj;    /* [hidden, heads*head_dim] */
  const uint16_t* const* gate_proj; /* [intermediate, hidden] */
  const uint16_t* const* up_proj;   /* [intermediate, hidden] */
  const uint16_t* const* down_proj; /* [hidden, intermediate] */
  const float* const* input_norm;   /* [hidden] */
  const float* const* post_attn_norm;
  /* KV cache: num_blocks > 0 takes exactly that many blocks; 0 sizes it so that the process uses
   * gpu_memory_utilization of the GPU's memory in all (weights, activations and KV). */
  int block_size;
  int num_blocks;
  float gpu_memory_utilization;
  int max_model_len;      /* longest sequence a decode graph must serve (longer ones run eagerly) */
  int max_num_seqs;       /* largest decode batch captured as a CUDA graph */
  int max_batched_tokens; /* activation buffers are sized for this many rows up front (they grow) */
  int enforce_eager;      /* 1: never use CUDA graphs */
  int device;             /* CUDA device ordinal */
  int precise;            /* 1: GEMM inputs as two bf16 planes (fp32-grade); 0: plain bf16 activations */
  int kv_bf16;            /* 1: KV cache in bf16 (half the memory and reads); 0: fp32 */
  int capture_graphs;     /* 1: capture every decode and mixed-step graph (greedy, sampling and
                           * host-logits outputs) while the model is created, as vLLM does at
                           * startup, so no request pays a capture; 0: each graph on its first use */
} EeCudaModelDesc;

/* One sequence's part of a step (same meaning as the engine's SeqSlice; inputs already validated). */
typedef struct {
  const int32_t* tokens;
  int n_tokens;
  int start_pos;
  const int32_t* block_table;
  int n_blocks;
  int logits; /* 0 none, 1 last token, 2 every token */
} EeCudaSlice;

typedef struct {
  int num_blocks;
  uint64_t kv_bytes;
  uint64_t weight_bytes;
  uint64_t gpu_bytes_used; /* by the whole process, after loading */
  uint64_t gpu_bytes_total;
  char device_name[128];
} EeCudaInfo;

int ee_cuda_abi_version(void);
/* Number of CUDA devices (0 when none or no driver); err says why when 0. */
int ee_cuda_device_count(char* err, int errlen);
EeCudaModel* ee_cuda_create(const EeCudaModelDesc* desc, char* err, int errlen);
void ee_cuda_destroy(EeCudaModel* m);
int ee_cuda_info(EeCudaModel* m, EeCudaInfo* out);
/* Sampling on the GPU, per logits row: temperature <= 0 is greedy; top_k 0 = off; top_p 1 and min_p
 * 0 = off; u is the row's uniform draw in [0, 1) (the caller's random stream); the first n_ban ids of
 * ban can be neither picked nor drawn (min_tokens: the stop ids); masked: the row has a grammar mask,
 * ceil(vocab / 32) words (bit t % 32 of word t / 32 set: token t allowed), which the fill wrote into
 * the library's upload buffer: a disallowed token can be neither picked nor drawn. */
#define EE_CUDA_MAX_BANS 8
typedef struct {
  float temperature, top_p, min_p, u;
  int top_k;
  int n_ban; /* 0..EE_CUDA_MAX_BANS */
  int32_t ban[EE_CUDA_MAX_BANS];
  int masked;
} EeCudaSample;

/* Fills a step's sampling entries, rows of them (zeroed: greedy, no mask), in logits-row order, and
 * writes each masked row's mask to masks + row * mask_words (pinned host memory, uploaded in one copy
 * after the call). Called on the thread running ee_cuda_forward once the step's forward pass is queued
 * on the GPU and before its sampling, so that the caller waits for what sampling needs (grammar masks)
 * while the GPU runs the forward, and can copy each mask in as it becomes available: the copy overlaps
 * the wait for the others instead of following the last one. */
typedef void (*EeCudaSampleFill)(void* ctx, EeCudaSample* sample, int rows, uint32_t* masks, int mask_words);

/* Runs one step. Exactly one of logits / argmax is non-null: logits receives rows * vocab floats
 * (the rows that asked, in slice order); argmax receives one token id per such row, computed on the
 * GPU (only the ids cross PCIe): the first maximum, or, when fill is non-null, a token drawn with the
 * parameters fill writes (one entry per row). */
int ee_cuda_forward(EeCudaModel* m, const EeCudaSlice* slices, int n, float* logits, int32_t* argmax,
                    EeCudaSampleFill fill, void* fill_ctx, char* err, int errlen);
/* Copies whole KV blocks (all layers, K and V): copy-on-write after a fork. */
int ee_cuda_copy_blocks(EeCudaModel* m, const int32_t* src, const int32_t* dst, int n, char* err, int errlen);
/* Steps served by a CUDA graph and eagerly since load, and graphs captured since load (at startup
 * and on first use; profiling / tests). */
void ee_cuda_graph_stats(EeCudaModel* m, uint64_t* graph_steps, uint64_t* eager_steps, uint64_t* captures);

#ifdef __cplusplus
}
#endif
#endif
