// The embedded default model directory `npm start` serves: ERNIE-4.5-0.3B's real shape with formula
// weights (./default-model.ts) plus the project's test tokenizer (test/fixtures/golden/tokenizer: made
// for this project, free to ship) and ERNIE's published generation_config.json. Everything a real
// checkpoint directory has, so the sidecar loads it through the normal path. Outputs are MEANINGLESS.
//
// `weights: false` assembles the same directory without model.safetensors (the test-only fake engine
// needs the config and tokenizer, not 640 MB of weights).

import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packagePath } from '../package-root.js';
import { cacheRoot, ensureFormulaCheckpoint, ERNIE_03B_CONFIG } from './default-model.js';

/** The id the default model is served under unless --served-model-name says otherwise. */
export const DEFAULT_MODEL_NAME = 'ernie-edge-default';

/** ERNIE-4.5-0.3B's published generation_config.json. */
export const ERNIE_GENERATION_CONFIG = {
  do_sample: true,
  top_p: 0.8,
  temperature: 0.8,
  bos_token_id: 1,
  eos_token_id: 2,
  pad_token_id: 0,
  repetition_penalty: 1.0,
  frequency_penalty: 0.0,
  presence_penalty: 0.0,
};

const TOKENIZER_DIR = packagePath('test', 'fixtures', 'golden', 'tokenizer');
/** [source relative to TOKENIZER_DIR, name in the model directory] */
const TOKENIZER_FILES: [string, string][] = [
  ['hf/tokenizer.json', 'tokenizer.json'],
  ['hf/tokenizer_config.json', 'tokenizer_config.json'],
  ['tokenizer.model', 'tokenizer.model'],
];

export interface DefaultModelOptions {
  weights: boolean;
  root?: string;
  onProgress?: (done: number, total: number) => void;
}

export async function ensureDefaultModelDir(opts: DefaultModelOptions): Promise<{ dir: string; generated: boolean }> {
  let dir: string;
  let generated = false;
  if (opts.weights) {
    ({ dir, generated } = await ensureFormulaCheckpoint(ERNIE_03B_CONFIG, { root: opts.root, onProgress: opts.onProgress }));
  } else {
    const stamp = createHash('sha256').update(JSON.stringify(ERNIE_03B_CONFIG)).digest('hex').slice(0, 16);
    dir = path.join(opts.root ?? cacheRoot(), `text-only-${stamp}`);
    await mkdir(dir, { recursive: true });
    await writeIfChanged(path.join(dir, 'config.json'), JSON.stringify(ERNIE_03B_CONFIG, null, 2));
  }
  for (const [src, name] of TOKENIZER_FILES) await writeIfChanged(path.join(dir, name), await readFile(path.join(TOKENIZER_DIR, src)));
  await writeIfChanged(path.join(dir, 'generation_config.json'), JSON.stringify(ERNIE_GENERATION_CONFIG, null, 2));
  return { dir, generated };
}

/** Idempotent and safe for two sidecars starting at once: unchanged files are left alone, writes are atomic. */
async function writeIfChanged(file: string, content: string | Buffer): Promise<void> {
  const want = typeof content === 'string' ? Buffer.from(content) : content;
  const have = await readFile(file).catch(() => null);
  if (have && have.equals(want)) return;
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, want);
  await rename(tmp, file);
}
