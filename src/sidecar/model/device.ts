// Which backend runs the model: the CPU kernels, or the CUDA runner (native/cuda/, a shared library
// the addon dlopen()s at run time, so a CPU-only install never needs CUDA). 'auto' picks CUDA when
// the library is built and sees a GPU.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { CudaProbe } from '../native.js';
import { packagePath } from '../package-root.js';

export type DeviceChoice = 'auto' | 'cpu' | 'cuda';

/** native/cuda/build/libernie_cuda.so of this checkout, unless ERNIE_EDGE_CUDA_LIBRARY names another. */
export function defaultCudaLibrary(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ERNIE_EDGE_CUDA_LIBRARY) return path.resolve(env.ERNIE_EDGE_CUDA_LIBRARY);
  return packagePath('native', 'cuda', 'build', 'libernie_cuda.so');
}

/**
 * The device to load on. `probe` is only called when the answer depends on it (it loads the
 * library). Asking for 'cuda' where it cannot run is an error that says why.
 */
export function resolveDevice(requested: DeviceChoice, library: string, probe: (lib: string) => CudaProbe): 'cpu' | 'cuda' {
  if (requested === 'cpu') return 'cpu';
  if (!existsSync(library)) {
    if (requested === 'cuda') throw new Error(`--device cuda: ${library} is not built (run \`bash native/cuda/build.sh\` on a machine with nvcc)`);
    return 'cpu';
  }
  const p = probe(library);
  if (p.available) return 'cuda';
  if (requested === 'cuda') throw new Error(`--device cuda: ${p.reason}`);
  return 'cpu';
}
