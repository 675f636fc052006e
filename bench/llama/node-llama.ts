// node-llama-cpp (llama.cpp's Node binding), loaded from the bench package (bench/package.json) when it
// is installed. Only the part of its API the benchmark uses is declared here.
// NOTE: declared locally, and imported through a non-literal specifier, so that `tsc -p .` and the main
// test suite work without the ~700 MB bench install; the names and shapes below are node-llama-cpp
// 3.21.1's (dist/evaluator/LlamaContext/*.d.ts, dist/bindings/getLlama.d.ts).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type Token = number;

export interface LlamaContextSequence {
  /** Evaluates `tokens`, then yields sampled tokens one by one until the caller stops iterating. */
  evaluate(tokens: Token[], options?: { temperature?: number; yieldEogToken?: boolean }): AsyncGenerator<Token, void, void>;
  evaluateWithoutGeneratingNewTokens(tokens: Token[]): Promise<void>;
  /** One output per input index that asked for `generateNext` (teacher forcing). */
  controlledEvaluate(
    input: (Token | [Token, { generateNext?: { token?: boolean; probabilities?: boolean; options?: { temperature?: number } } }])[],
  ): Promise<({ next: { token?: Token | null; probabilities?: Map<Token, number> } } | undefined)[]>;
  clearHistory(): Promise<void>;
  dispose(): void;
}

export interface LlamaContextOptions {
  contextSize: number; // per sequence
  sequences: number;
  threads: number;
  batchSize?: number; // tokens per llama_decode (default min(contextSize * sequences, 512))
  flashAttention?: boolean;
  batching?: { dispatchSchedule?: 'nextCycle' | ((dispatch: () => void) => void); itemPrioritizationStrategy?: 'maximumParallelism' | 'firstInFirstOut' };
}

export interface LlamaContext {
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  createContext(options: LlamaContextOptions): Promise<LlamaContext>;
  dispose(): Promise<void>;
}

export interface Llama {
  readonly systemInfo: string;
  readonly cpuMathCores: number;
  loadModel(options: { modelPath: string }): Promise<LlamaModel>;
  dispose(): Promise<void>;
}

interface NodeLlamaCpp {
  getLlama(options: { gpu: false; build: 'never'; maxThreads: number; logLevel: 'warn' | 'error'; progressLogs: boolean }): Promise<Llama>;
}

const here = path.dirname(fileURLToPath(import.meta.url));
export const INSTALL_HINT = 'NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --prefix bench';

const PACKAGE_JSON = path.resolve(here, '../node_modules/node-llama-cpp/package.json');

/** True when bench/node_modules holds node-llama-cpp. */
export function nodeLlamaInstalled(): boolean {
  return existsSync(PACKAGE_JSON);
}

/** The installed node-llama-cpp version (bench/package.json pins it). */
export function nodeLlamaVersion(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

/**
 * llama.cpp on the CPU with `threads` threads, from the prebuilt binary npm installed
 * (@node-llama-cpp/linux-x64: CPU variants chosen at run time by CPU features). `build: 'never'`: never
 * download or compile llama.cpp (this machine reaches npm only).
 */
export async function loadLlama(threads: number): Promise<Llama> {
  const specifier: string = 'node-llama-cpp'; // resolved from bench/node_modules
  const mod = (await import(specifier)) as NodeLlamaCpp;
  return mod.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: 'error', progressLogs: false });
}
