// The prompts `bench serve` sends: random (token ids for /v1/completions as vLLM sends them; words for
// chat, which takes text), ShareGPT conversations, or the seed article's 5 Chinese prompts. Built
// once for the whole sweep from --seed; level k takes its own slice, so no level's prompts were seen
// by the server in an earlier level (a prefix cache would otherwise serve them from memory).

import { readFile } from 'node:fs/promises';
import type { BenchServeOptions, Endpoint } from './args.js';
import { rng, subSeed, uniformInt } from './rng.js';

/** The seed article's prompts (bench/engine/workload.ts runs them through the engine directly). */
export const ARTICLE_PROMPTS = [
  '请用中文介绍一下人工智能的发展历史。',
  '写一首关于春天的五言绝句。',
  '解释一下什么是机器学习，并举一个例子。',
  '如何快速学习Python编程？',
  '描述一下你理想中的智能助手应该具备哪些功能。',
];

export interface BenchPrompt {
  /** Token ids (random dataset on /v1/completions) or text. */
  prompt: number[] | string;
  /** Prompt tokens as built (ids) or estimated (text); the server's usage.prompt_tokens wins when it reports one. */
  promptTokens: number;
  /** max_tokens of the request. */
  outputTokens: number;
}

/** Lowest random token id: ids below it are special tokens in most vocabularies (bos, eos, pad, unk…). */
export const RANDOM_TOKEN_MIN = 16;

// Common English words, each a single token (with its leading space) in the usual BPE vocabularies,
// so a chat prompt of N words is about N prompt tokens without a tokenizer on the client.
const WORDS = (
  'the of and to in is was for on that with as by at from his her it an were are which this be or ' +
  'have had not but one all new more when who will their there been has time first after also made ' +
  'into only over such some than other these most where then two may any many before through year people'
).split(' ');

/** Estimated tokens of text with no tokenizer at hand: one per CJK character, one per 4 other characters. */
export function approxTokens(text: string): number {
  const cjk = text.match(/[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]/g)?.length ?? 0;
  const rest = text.replace(/[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef\s]/g, '').length;
  return cjk + Math.ceil(rest / 4);
}

/** n random prompts: lengths uniform on opts.inputLen / opts.outputLen, ids uniform on [16, vocabSize). */
export function randomPrompts(n: number, opts: Pick<BenchServeOptions, 'inputLen' | 'outputLen' | 'vocabSize' | 'seed'>, endpoint: Endpoint): BenchPrompt[] {
  const lens = rng(subSeed(opts.seed, 1));
  const ids = rng(subSeed(opts.seed, 2));
  return Array.from({ length: n }, () => {
    const inLen = uniformInt(lens, opts.inputLen[0], opts.inputLen[1]);
    const outLen = uniformInt(lens, opts.outputLen[0], opts.outputLen[1]);
    const prompt =
      endpoint === '/v1/completions'
        ? Array.from({ length: inLen }, () => uniformInt(ids, RANDOM_TOKEN_MIN, opts.vocabSize - 1))
        : Array.from({ length: inLen }, () => WORDS[Math.floor(ids() * WORDS.length)]!).join(' ');
    return { prompt, promptTokens: inLen, outputTokens: outLen };
  });
}

interface ShareGptEntry {
  conversations?: { from?: string; value?: string }[];
}

/**
 * n prompts from a ShareGPT file: conversations with a first turn and a reply, shuffled by the seed,
 * kept as vLLM keeps them (prompt and reply ≥ 4 tokens, prompt ≤ 1024, both ≤ 2048; estimated here),
 * cycled when the file has fewer than n.
 */
export async function shareGptPrompts(n: number, file: string, seed: number, outputLen?: number): Promise<BenchPrompt[]> {
  const raw = JSON.parse(await readFile(file, 'utf8')) as unknown;
  if (!Array.isArray(raw)) throw new Error(`${file}: not a ShareGPT file (expected a JSON list of {conversations: [...]})`);
  const pool: BenchPrompt[] = [];
  for (const e of raw as ShareGptEntry[]) {
    const turns = e?.conversations;
    if (!Array.isArray(turns) || turns.length < 2) continue;
    const [q, a] = [turns[0]?.value, turns[1]?.value];
    if (typeof q !== 'string' || typeof a !== 'string') continue;
    const inLen = approxTokens(q);
    const outLen = outputLen ?? approxTokens(a);
    if (inLen < 4 || outLen < 4 || inLen > 1024 || inLen + outLen > 2048) continue;
    pool.push({ prompt: q, promptTokens: inLen, outputTokens: outLen });
  }
  if (pool.length === 0) throw new Error(`${file}: no usable conversation (each needs a prompt and a reply of 4 to 2048 tokens)`);
  const next = rng(subSeed(seed, 3));
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return Array.from({ length: n }, (_, i) => pool[i % pool.length]!);
}

/** n requests cycling the article's 5 prompts (text on either endpoint). */
export function articlePrompts(n: number, outputLen: number): BenchPrompt[] {
  return Array.from({ length: n }, (_, i) => {
    const text = ARTICLE_PROMPTS[i % ARTICLE_PROMPTS.length]!;
    return { prompt: text, promptTokens: approxTokens(text), outputTokens: outputLen };
  });
}

/** Every level's prompts: one list per --max-concurrency level, built together from the seed. */
export async function buildDataset(opts: BenchServeOptions): Promise<BenchPrompt[][]> {
  const total = opts.numPrompts.reduce((a, b) => a + b, 0);
  const all =
    opts.dataset === 'random'
      ? randomPrompts(total, opts, opts.endpoint)
      : opts.dataset === 'sharegpt'
        ? await shareGptPrompts(total, opts.datasetPath!, opts.seed, opts.sharegptOutputLen)
        : articlePrompts(total, opts.articleOutputLen);
  let at = 0;
  return opts.numPrompts.map((n) => all.slice(at, (at += n)));
}
