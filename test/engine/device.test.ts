// Device selection (host-side logic, runs everywhere): 'auto' falls back to the CPU where the CUDA
// library is missing or sees no GPU; an explicit 'cuda' there is an error that says why.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { defaultCudaLibrary, resolveDevice } from '../../src/sidecar/model/device.js';
import { native } from '../../src/sidecar/native.js';
import { kvBlockBytes } from '../../src/sidecar/engine/plan.js';
import { loadModel } from '../../src/sidecar/model/load.js';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { TINY } from './engine-helpers.js';

const missing = '/nonexistent/libernie_cuda.so';
const never = () => {
  throw new Error('must not probe');
};

describe('device selection', () => {
  it('cpu never touches the CUDA library', () => {
    expect(resolveDevice('cpu', missing, never)).toBe('cpu');
  });
  it('auto without a built library is the CPU; cuda says how to build it', () => {
    expect(resolveDevice('auto', missing, never)).toBe('cpu');
    expect(() => resolveDevice('cuda', missing, never)).toThrow(/not built .*native\/cuda\/build\.sh/);
  });
  it('a library that sees no GPU: auto is the CPU, cuda carries the reason', () => {
    const here = import.meta.filename; // any existing file stands in for the library
    const none = () => ({ available: false, devices: 0, reason: 'no CUDA device' });
    expect(resolveDevice('auto', here, none)).toBe('cpu');
    expect(() => resolveDevice('cuda', here, none)).toThrow(/no CUDA device/);
    expect(resolveDevice('auto', here, () => ({ available: true, devices: 1, reason: '' }))).toBe('cuda');
  });
  it('the addon reports an unloadable library as a value, not a crash', () => {
    const p = native().cudaInfo(missing);
    expect(p.available).toBe(false);
    expect(p.reason).toMatch(/cannot load the CUDA backend/);
  });
  it('the default library path is in this checkout unless ERNIE_EDGE_CUDA_LIBRARY says otherwise', () => {
    expect(defaultCudaLibrary({})).toMatch(/native\/cuda\/build\/libernie_cuda\.so$/);
    expect(defaultCudaLibrary({ ERNIE_EDGE_CUDA_LIBRARY: 'x/lib.so' })).toBe(path.resolve('x/lib.so'));
  });
  it('a bfloat16 KV cache on the CPU: blocks of half the bytes, other element types refused with a reason', async () => {
    const ck = await readCheckpoint(TINY);
    expect(kvBlockBytes(ck.config.native, 16, 'bfloat16') * 2).toBe(kvBlockBytes(ck.config.native, 16));
    const { model } = await loadModel(TINY, { device: 'cpu', kvBlocks: 8, kvCacheDtype: 'bfloat16' });
    try {
      expect(model.info().kvBytes).toBe(8 * kvBlockBytes(ck.config.native, 16, 'bfloat16'));
    } finally {
      model.close();
    }
    await expect(loadModel(TINY, { device: 'cpu', kvBlocks: 8, kvCacheDtype: 'float16' as 'bfloat16' })).rejects.toThrow(/kvCacheDtype must be float32 or bfloat16/);
  });
});
