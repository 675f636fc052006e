// planEngine (src/sidecar/engine/plan.ts): the KV cache, max_model_len, token budget and load options
// from a checkpoint's config, the options, the device and the free memory. Pure: no addon, no files.
import { describe, expect, it } from 'vitest';
import { kvBlockBytes, planEngine, type PlanInput } from '../../../src/sidecar/engine/plan.js';
import { parseModelConfig } from '../../../src/sidecar/model/config.js';

const GiB = 2 ** 30;
// test/fixtures/golden/tiny's shape: 2 layers × K,V × 2 KV heads × 16 tokens × 128 dims × 4 bytes = 64 KiB a block.
const RAW = {
  architectures: ['Ernie4_5ForCausalLM'],
  hidden_size: 256,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  head_dim: 128,
  num_hidden_layers: 2,
  intermediate_size: 512,
  vocab_size: 2048,
  max_position_embeddings: 4096,
};
const config = parseModelConfig('config.json', RAW);
const BLOCK = 64 * 1024;

const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  config,
  weightBytes: 1 * GiB,
  device: 'cpu',
  cudaLibrary: '/lib/libernie_cuda.so',
  freeMemory: 16 * GiB,
  options: {},
  ...over,
});

describe('planEngine: the KV cache', () => {
  it('block bytes follow the shape and the KV dtype', () => {
    expect(kvBlockBytes(config.native, 16)).toBe(BLOCK);
    expect(kvBlockBytes(config.native, 16, 'bfloat16')).toBe(BLOCK / 2);
    const p = planEngine(input({ options: { blockSize: 32, kvCacheDtype: 'bfloat16', kvCacheMemory: 64 * BLOCK } }));
    expect(p).toMatchObject({ blockSize: 32, kvBlockBytes: BLOCK, kvBlocks: 64 });
  });

  it('default on the CPU: min(4 GiB, 25% of free RAM), at least one block', () => {
    expect(planEngine(input({ freeMemory: 64 * GiB })).kvBlocks).toBe((4 * GiB) / BLOCK);
    expect(planEngine(input({ freeMemory: 1 * GiB, weightBytes: 0 })).kvBlocks).toBe(GiB / 4 / BLOCK);
    expect(planEngine(input({ freeMemory: 100 * 1024, weightBytes: 0 })).kvBlocks).toBe(1); // 25% is under one block: one (it fits)
  });

  it('refuses on the CPU, with the numbers, weights + KV cache above the memory this process can take', () => {
    const over = input({ freeMemory: 2 * GiB, freeMemorySource: 'cgroup memory.max 2.0 GiB, 0.0 GiB in use', weightBytes: GiB / 2, options: { kvCacheMemory: 2 * GiB } });
    expect(() => planEngine(over)).toThrow(
      'not enough memory: the weights (0.50 GiB) and the KV cache (2.00 GiB) need 2.50 GiB, but this process can take only 2.00 GiB (cgroup memory.max 2.0 GiB, 0.0 GiB in use); lower --kv-cache-memory',
    );
    expect(() => planEngine(input({ freeMemory: 1000 }))).toThrow(/not enough memory/); // not even one block
    expect(planEngine({ ...over, device: 'cuda' }).kvBlocks).toBe((2 * GiB) / BLOCK); // the KV cache is on the GPU
    expect(planEngine(input({ freeMemory: 2.5 * GiB, weightBytes: GiB / 2, options: { kvCacheMemory: 2 * GiB } })).kvBlocks).toBe((2 * GiB) / BLOCK);
  });

  it('--kv-cache-memory: that many bytes of blocks (rounded down, at least one), on either device', () => {
    expect(planEngine(input({ options: { kvCacheMemory: 10 * BLOCK + 5 } })).kvBlocks).toBe(10);
    expect(planEngine(input({ options: { kvCacheMemory: 1 } })).kvBlocks).toBe(1);
    expect(planEngine(input({ device: 'cuda', options: { kvCacheMemory: 10 * BLOCK } })).kvBlocks).toBe(10);
  });

  it('--gpu-memory-utilization on the CPU: that fraction of free RAM, less the weights', () => {
    const p = planEngine(input({ freeMemory: 8 * GiB, weightBytes: 1 * GiB, options: { gpuMemoryUtilization: 0.5 } }));
    expect(p.kvBlocks).toBe((3 * GiB) / BLOCK);
    expect(p.load.gpuMemoryUtilization).toBe(0.5);
    // Exactly one block left over fits; less than one is an error that names the flag and the weights.
    expect(planEngine(input({ freeMemory: 2 * GiB + 2 * BLOCK, weightBytes: GiB, options: { gpuMemoryUtilization: 0.5 } })).kvBlocks).toBe(1);
    expect(() => planEngine(input({ freeMemory: 2 * GiB, weightBytes: GiB, options: { gpuMemoryUtilization: 0.5 } }))).toThrow(
      `--gpu-memory-utilization 0.5 leaves no memory for the KV cache after the weights (${GiB} bytes)`,
    );
  });

  it('CUDA without --kv-cache-memory: 0 blocks, sized on the GPU to --gpu-memory-utilization (default 0.9)', () => {
    const d = planEngine(input({ device: 'cuda' }));
    expect(d.kvBlocks).toBe(0);
    expect(d.load).toMatchObject({ kvBlocks: 0, gpuMemoryUtilization: 0.9, device: 'cuda' });
    const u = planEngine(input({ device: 'cuda', freeMemory: 0, options: { gpuMemoryUtilization: 0.5 } }));
    expect(u.load).toMatchObject({ kvBlocks: 0, gpuMemoryUtilization: 0.5 }); // free RAM plays no part on the GPU
  });

  it('an explicit block count wins over every sizing rule', () => {
    expect(planEngine(input({ options: { kvBlocks: 7, kvCacheMemory: GiB } })).kvBlocks).toBe(7);
    expect(planEngine(input({ device: 'cuda', options: { kvBlocks: 7 } })).load.kvBlocks).toBe(7);
  });

  it('refuses a block size outside 1..1024', () => {
    expect(() => planEngine(input({ options: { blockSize: 0 } }))).toThrow(RangeError);
    expect(() => planEngine(input({ options: { blockSize: 2048 } }))).toThrow(/blockSize must be 1\.\.1024/);
  });
});

describe('planEngine: context length and token budget', () => {
  it('max_model_len: min(max_position_embeddings, 8192) by default; a larger one asked for is an error', () => {
    expect(planEngine(input()).maxModelLen).toBe(4096);
    const big = parseModelConfig('config.json', { ...RAW, max_position_embeddings: 131072 });
    expect(planEngine(input({ config: big })).maxModelLen).toBe(8192);
    expect(planEngine(input({ options: { maxModelLen: 1000 } })).maxModelLen).toBe(1000);
    expect(planEngine(input({ options: { maxModelLen: 4096 } })).load.maxModelLen).toBe(4096);
    expect(() => planEngine(input({ options: { maxModelLen: 4097 } }))).toThrow("--max-model-len 4097 exceeds the model's max_position_embeddings (4096)");
  });

  it('batched tokens per step: 512 on the CPU, 2048 on CUDA, or as given; the load options agree', () => {
    expect(planEngine(input({ device: 'cpu' })).maxNumBatchedTokens).toBe(512);
    expect(planEngine(input({ device: 'cuda' })).maxNumBatchedTokens).toBe(2048);
    const given = planEngine(input({ device: 'cuda', options: { maxNumBatchedTokens: 300 } }));
    expect([given.maxNumBatchedTokens, given.load.maxNumBatchedTokens]).toEqual([300, 300]);
  });
});

describe('planEngine: the load options', () => {
  it('are complete, with every default filled in', () => {
    const p = planEngine(input({ freeMemory: 64 * GiB }));
    expect(p).toEqual({
      device: 'cpu',
      blockSize: 16,
      kvBlocks: (4 * GiB) / BLOCK,
      kvBlockBytes: BLOCK,
      weightBytes: GiB,
      maxModelLen: 4096,
      maxNumBatchedTokens: 512,
      load: {
        threads: 0,
        kvBlocks: (4 * GiB) / BLOCK,
        blockSize: 16,
        isa: '',
        precise: true,
        quantization: 'none',
        lmHeadInt8: true,
        lmHeadPrecise: true,
        device: 'cpu',
        cudaLibrary: '/lib/libernie_cuda.so',
        gpuMemoryUtilization: 0.9,
        enforceEager: false,
        captureGraphs: false,
        kvCacheDtype: 'float32',
        maxModelLen: 4096,
        maxNumSeqs: 256,
        maxNumBatchedTokens: 512,
      },
    });
  });

  it('the KV cache dtype left to us: bf16 under int8 where the bf16 dot attention is the fast one (half the bytes a block), else fp32; one asked for wins', () => {
    const int8 = planEngine(input({ bf16DotFast: true, options: { quantization: 'int8', kvCacheMemory: 64 * BLOCK } }));
    expect(int8.load.kvCacheDtype).toBe('bfloat16');
    expect(int8).toMatchObject({ kvBlockBytes: BLOCK / 2, kvBlocks: 128 });
    expect(planEngine(input({ options: { quantization: 'int8' } })).load.kvCacheDtype).toBe('float32'); // an AMX Xeon's
    expect(planEngine(input({ bf16DotFast: true, device: 'cuda', options: { quantization: 'int8' } })).load.kvCacheDtype).toBe('float32');
    expect(planEngine(input({ bf16DotFast: true, options: { quantization: 'none' } })).load.kvCacheDtype).toBe('float32');
    expect(planEngine(input({ bf16DotFast: true, options: { quantization: 'int8', kvCacheDtype: 'float32' } })).load.kvCacheDtype).toBe('float32');
    expect(planEngine(input({ options: { kvCacheDtype: 'bfloat16' } })).load.kvCacheDtype).toBe('bfloat16');
  });

  it('carry what was asked', () => {
    const o = { threads: 3, isa: 'avx2', precise: false, enforceEager: true, captureGraphs: true, kvCacheDtype: 'bfloat16', maxNumSeqs: 8 } as const;
    expect(planEngine(input({ device: 'cuda', options: o })).load).toMatchObject({ ...o, device: 'cuda' });
  });
});
