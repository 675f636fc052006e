// generation_config.json → ModelInfo.generationDefaults (the gateway applies them to requests that
// leave a parameter unset). As vLLM's `--generation-config auto`: only values present in the file are
// used, and `do_sample` is not interpreted (ERNIE's file says do_sample true with temperature 0.8).

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelInfo } from '../../protocol/engine-client.js';

type Defaults = ModelInfo['generationDefaults'];

export async function readGenerationDefaults(dir: string): Promise<Defaults> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(dir, 'generation_config.json'), 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`${join(dir, 'generation_config.json')}: ${(e as Error).message}`);
  }
  const c = (raw ?? {}) as Record<string, unknown>;
  const out: Defaults = {};
  const num = (k: string) => (typeof c[k] === 'number' && Number.isFinite(c[k]) ? (c[k] as number) : undefined);
  const t = num('temperature');
  if (t !== undefined && t >= 0) out.temperature = t;
  const p = num('top_p');
  if (p !== undefined && p > 0 && p <= 1) out.topP = p;
  const k = num('top_k');
  if (k !== undefined && Number.isInteger(k)) out.topK = k;
  const r = num('repetition_penalty');
  if (r !== undefined && r > 0) out.repetitionPenalty = r;
  return out;
}
