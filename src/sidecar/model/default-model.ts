// The embedded default model: ERNIE-4.5-0.3B's real shape with formula weights, generated once
// into a cache directory. It lets `npm start`, tests and benchmarks run with no download; its
// outputs are meaningless (the weights are a hash, not a trained model).
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeFormulaCheckpoint } from './formula.js';

/** ERNIE-4.5-0.3B's architecture (the published config.json's numbers). */
export const ERNIE_03B_CONFIG: Record<string, unknown> = {
  architectures: ['Ernie4_5ForCausalLM'],
  model_type: 'ernie4_5',
  bos_token_id: 1,
  eos_token_id: 2,
  pad_token_id: 0,
  tie_word_embeddings: true,
  use_bias: false,
  rms_norm_eps: 1e-5,
  hidden_act: 'silu',
  vocab_size: 103424,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: 18,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  head_dim: 128,
  max_position_embeddings: 131072,
  rope_theta: 500000.0,
};

export function cacheRoot(): string {
  if (process.env.ERNIE_EDGE_CACHE) return process.env.ERNIE_EDGE_CACHE;
  const base = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(base, 'ernie-edge');
}

/**
 * Returns a directory holding a formula-weight checkpoint for `config`, generating it when absent.
 * A stamp file records what was generated, so a changed config or salt regenerates.
 */
export async function ensureFormulaCheckpoint(
  config: Record<string, unknown> = ERNIE_03B_CONFIG,
  opts: { salt?: number; root?: string; onProgress?: (done: number, total: number) => void } = {},
): Promise<{ dir: string; generated: boolean }> {
  const stamp = createHash('sha256').update(JSON.stringify({ config, salt: opts.salt ?? 0, v: 1 })).digest('hex').slice(0, 16);
  const dir = path.join(opts.root ?? cacheRoot(), `formula-${stamp}`);
  const stampFile = path.join(dir, 'formula.stamp');
  try {
    if ((await readFile(stampFile, 'utf8')).trim() === stamp) return { dir, generated: false };
  } catch {
    /* not generated yet */
  }
  await writeFormulaCheckpoint(dir, config, opts);
  await writeFile(stampFile, stamp);
  return { dir, generated: true };
}
