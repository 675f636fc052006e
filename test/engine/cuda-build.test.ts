// The CUDA sources compile (nvcc -c, sm_90, -O3, as native/cuda/CMakeLists.txt builds them) on any
// machine with nvcc, GPU or not: a host-pass error (e.g. a device intrinsic in a __device__
// constructor, which reached main once and only a GPU build would have shown) is caught in CI.
// cuBLAS is declared by native/cuda/check/cublas_v2.h, since these machines have nvcc but no cuBLAS;
// nothing is linked. Skipped, with the reason printed, where nvcc is absent.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const src = path.join(root, 'native/cuda/src');
const nvcc = (() => {
  try {
    execFileSync('nvcc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!nvcc) console.log('[cuda-build] skipping the CUDA compile check: nvcc is not on PATH');

function compile(file: string, out: string): Promise<{ code: number; log: string }> {
  const args = ['-std=c++17', '-arch=sm_90', '-O3', '-DEE_CUDA_BUILD', '-I', path.join(root, 'native/cuda/include'),
    '-I', path.join(root, 'native/cuda/check'), '-c', path.join(src, file), '-o', path.join(out, `${file}.o`)];
  return new Promise((resolve) => {
    const p = spawn('nvcc', args);
    let log = '';
    p.stdout.on('data', (d) => (log += d));
    p.stderr.on('data', (d) => (log += d));
    p.on('close', (code) => resolve({ code: code ?? -1, log }));
  });
}

describe('native/cuda sources', () => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'ee-cuda-build-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it.skipIf(!nvcc)('every .cu file compiles for sm_90 against the cuBLAS declarations', async () => {
    const files = readdirSync(src).filter((f) => f.endsWith('.cu'));
    expect(files.length).toBeGreaterThanOrEqual(4);
    // Two at a time (CI has two cores); attn_decode.cu, the slowest, first.
    const queue = [...files].sort((a, b) => Number(b === 'attn_decode.cu') - Number(a === 'attn_decode.cu'));
    const failures: string[] = [];
    const worker = async () => {
      for (let f = queue.shift(); f; f = queue.shift()) {
        const r = await compile(f, out);
        if (r.code !== 0) failures.push(`${f}:\n${r.log.split('\n').filter((l) => /error/.test(l)).slice(0, 5).join('\n')}`);
      }
    };
    await Promise.all([worker(), worker()]);
    expect(failures).toEqual([]);
  }, 600_000);
});
