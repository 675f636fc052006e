// Writes a formula-weight checkpoint (test/fixtures/golden/SPEC.md) for any config: a real
// safetensors file the normal loader reads, bit-exact with the reference generator.
import { createWriteStream } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { native } from '../native.js';
import { parseModelConfig } from './config.js';
import { safetensorsHeader } from './safetensors.js';

export interface FormulaTensor {
  name: string;
  shape: number[];
}

/** Tensor names and HF shapes for a config (tied embeddings: no lm_head tensor). */
export function formulaTensors(rawConfig: Record<string, unknown>): FormulaTensor[] {
  const c = parseModelConfig('config.json', rawConfig).native;
  const H = c.hiddenSize, I = c.intermediateSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
  const out: FormulaTensor[] = [
    { name: 'model.embed_tokens.weight', shape: [c.vocabSize, H] },
    { name: 'model.norm.weight', shape: [H] },
  ];
  if (!c.tieWordEmbeddings) out.push({ name: 'lm_head.weight', shape: [c.vocabSize, H] });
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    out.push(
      { name: p + 'input_layernorm.weight', shape: [H] },
      { name: p + 'post_attention_layernorm.weight', shape: [H] },
      { name: p + 'self_attn.q_proj.weight', shape: [Q, H] },
      { name: p + 'self_attn.k_proj.weight', shape: [KV, H] },
      { name: p + 'self_attn.v_proj.weight', shape: [KV, H] },
      { name: p + 'self_attn.o_proj.weight', shape: [H, Q] },
      { name: p + 'mlp.gate_proj.weight', shape: [I, H] },
      { name: p + 'mlp.up_proj.weight', shape: [I, H] },
      { name: p + 'mlp.down_proj.weight', shape: [H, I] },
    );
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

export const numel = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

/**
 * Writes config.json and model.safetensors into dir (atomically: a partial file is never left
 * under the final name). onProgress(doneBytes, totalBytes) after each tensor.
 */
export async function writeFormulaCheckpoint(
  dir: string,
  rawConfig: Record<string, unknown>,
  opts: { salt?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const tensors = formulaTensors(rawConfig);
  const entries = tensors.map((t) => ({ name: t.name, dtype: 'BF16' as const, shape: t.shape, nbytes: numel(t.shape) * 2 }));
  const total = entries.reduce((a, e) => a + e.nbytes, 0);
  const tmp = path.join(dir, `model.safetensors.tmp-${process.pid}`);
  const out = createWriteStream(tmp);
  let done = 0;
  try {
    const header = safetensorsHeader(entries, { format: 'pt', generator: 'ernie-edge formula weights' });
    if (!out.write(header)) await once(out, 'drain');
    for (const t of tensors) {
      const buf = await native().formulaTensor(t.name, numel(t.shape), opts.salt ?? 0);
      if (!out.write(buf)) await once(out, 'drain');
      done += buf.length;
      opts.onProgress?.(done, total);
    }
    out.end();
    await once(out, 'finish');
  } catch (e) {
    out.destroy();
    throw e;
  }
  await rename(tmp, path.join(dir, 'model.safetensors'));
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(rawConfig, null, 2));
}
