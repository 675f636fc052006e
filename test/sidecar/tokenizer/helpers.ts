// Shared fixtures for the tokenizer tests: golden data, checkpoint directories assembled in a temp dir
// (never in the repo), a seeded PRNG and a random-Unicode generator.

import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng as prng } from '../../../src/cli/bench-serve/rng.js';
export { prng };

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const GOLDEN_DIR = join(REPO, 'test/fixtures/golden/tokenizer');
/** The real ERNIE-4.5-0.3B side files; absent on machines without ../shared. */
export const SHARED_ERNIE = resolve(REPO, '../shared/ernie-4.5-0.3b');
export const HAS_SHARED = existsSync(join(SHARED_ERNIE, 'tokenizer_config.json'));
export const SHARED_SKIP_REASON = `../shared/ernie-4.5-0.3b not found at ${SHARED_ERNIE}: skipping tests on the real ERNIE-4.5 side files`;

export interface GoldenCase {
  text: string;
  ids: number[];
  pieces?: string[];
  decoded: string;
}
export interface GoldenChat {
  messages: Array<{ role: string; content: string }>;
  add_generation_prompt: boolean;
  rendered: string;
}
export interface Golden {
  cases: GoldenCase[];
  hf_fast: GoldenCase[];
  chat_template: GoldenChat[];
}

export const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'golden.json'), 'utf8')) as Golden;

const created: string[] = [];

/** Removes every directory makeCheckpoint made (call from afterAll). */
export async function removeCheckpoints(): Promise<void> {
  await Promise.all(created.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/**
 * A checkpoint directory in a fresh temp dir: `files` maps target name → source path.
 * The golden tokenizer files: tokenizer.model at GOLDEN_DIR, tokenizer.json + tokenizer_config.json in hf/.
 */
export async function makeCheckpoint(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ernie-edge-tok-'));
  created.push(dir);
  await Promise.all(Object.entries(files).map(([name, src]) => copyFile(src, join(dir, name))));
  return dir;
}

export const GOLDEN_FILES = {
  model: join(GOLDEN_DIR, 'tokenizer.model'),
  json: join(GOLDEN_DIR, 'hf/tokenizer.json'),
  config: join(GOLDEN_DIR, 'hf/tokenizer_config.json'),
};

/** The real ERNIE JSON side files + the test tokenizer files (`which` picks which tokenizer files). */
export async function makeRealErnieCheckpoint(which: Array<'model' | 'json'>): Promise<string> {
  const files: Record<string, string> = {};
  for (const name of await readdir(SHARED_ERNIE)) if (name.endsWith('.json')) files[name] = join(SHARED_ERNIE, name);
  if (which.includes('model')) files['tokenizer.model'] = GOLDEN_FILES.model;
  if (which.includes('json')) files['tokenizer.json'] = GOLDEN_FILES.json;
  return makeCheckpoint(files);
}


export function pick<T>(rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)]!;
}

function range(rand: () => number, lo: number, hi: number): string {
  return String.fromCodePoint(lo + Math.floor(rand() * (hi - lo + 1)));
}

/**
 * Random well-formed text mixing ASCII words, digits, whitespace runs, CJK (BMP and astral), emoji (with
 * skin tones and ZWJ), combining marks, other scripts and marker-like strings. Excluded on purpose:
 * U+2581 '▁' (both references turn it into a space on decode) and U+FFFD (the no-U+FFFD assertions).
 */
export function randomText(rand: () => number, maxParts = 12): string {
  const parts: string[] = [];
  const n = 1 + Math.floor(rand() * maxParts);
  const gens: Array<() => string> = [
    () => pick(rand, ['the', 'Hello', 'tensor', 'scheduler', 'a', 'x', 'protocol', 'nanovllm', 'é', 'naïve']),
    () => range(rand, 0x21, 0x7e).repeat(1 + Math.floor(rand() * 3)),
    () => String(Math.floor(rand() * 100000)),
    () => pick(rand, [' ', '  ', '   ', '\t', '\n', '\r\n', '\n\n', ' \t ', '    ']),
    () => Array.from({ length: 1 + Math.floor(rand() * 6) }, () => range(rand, 0x4e00, 0x9fff)).join(''),
    () => pick(rand, ['中文', '人工智能', '的', '。', '，', '你好', '发展历史', '饕餮', '金风送爽']),
    () => range(rand, 0x20000, 0x2a6df), // CJK extension B (astral)
    () => range(rand, 0x1f300, 0x1faff),
    () => '👍' + range(rand, 0x1f3fb, 0x1f3ff), // skin tone modifier
    () => '👩\u200d💻',
    () => 'e' + range(rand, 0x300, 0x36f) + range(rand, 0x300, 0x36f), // combining marks
    () => range(rand, 0x600, 0x6ff) + range(rand, 0xe01, 0xe3a) + range(rand, 0x410, 0x44f),
    () => range(rand, 0x1d400, 0x1d7ff), // mathematical alphanumerics (astral)
    () => pick(rand, ['<s>', '</s>', '<unk>', '<|end_of_sentence|>', '<mask:1>', '<0x41>', '<|', '|>']),
  ];
  for (let i = 0; i < n; i++) parts.push(pick(rand, gens)());
  return parts.join(pick(rand, ['', '', ' ']));
}

/** Random split of `xs` into consecutive non-empty chunks. */
export function randomChunks<T>(rand: () => number, xs: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; ) {
    const n = 1 + Math.floor(rand() * Math.min(5, xs.length - i));
    out.push(xs.slice(i, i + n));
    i += n;
  }
  return out;
}
