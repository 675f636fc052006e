// The seeded parts of bench serve: arrival times (Poisson by default) and prompts are the same for
// the same seed and differ for another; their statistics are those asked for.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARTICLE_PROMPTS, approxTokens, articlePrompts, RANDOM_TOKEN_MIN, randomPrompts, shareGptPrompts } from '../../../src/cli/bench-serve/dataset.js';
import { arrivalOffsetsMs, rng } from '../../../src/cli/bench-serve/rng.js';

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const gaps = (xs: number[]) => xs.slice(1).map((x, i) => x - xs[i]!);

describe('arrivals', () => {
  it('are deterministic by seed, Poisson at the asked rate', () => {
    const a = arrivalOffsetsMs(4000, 50, 1, 7);
    expect(arrivalOffsetsMs(4000, 50, 1, 7)).toEqual(a);
    expect(arrivalOffsetsMs(4000, 50, 1, 8)).not.toEqual(a);
    expect(a[0]).toBe(0);
    const g = gaps(a);
    expect(g.every((x) => x > 0)).toBe(true);
    // Exponential gaps: mean 1/rate (20 ms) and coefficient of variation 1.
    expect(mean(g)).toBeGreaterThan(19);
    expect(mean(g)).toBeLessThan(21);
    const sd = Math.sqrt(mean(g.map((x) => (x - mean(g)) ** 2)));
    expect(sd / mean(g)).toBeGreaterThan(0.93);
    expect(sd / mean(g)).toBeLessThan(1.07);
  });

  it('are all at 0 for inf, and more regular for burstiness above 1', () => {
    expect(arrivalOffsetsMs(5, Infinity, 1, 1)).toEqual([0, 0, 0, 0, 0]);
    const g = gaps(arrivalOffsetsMs(4000, 50, 4, 1));
    const cv = Math.sqrt(mean(g.map((x) => (x - mean(g)) ** 2))) / mean(g);
    expect(mean(g)).toBeGreaterThan(19);
    expect(mean(g)).toBeLessThan(21);
    expect(cv).toBeGreaterThan(0.4); // gamma(4): cv 1/2
    expect(cv).toBeLessThan(0.6);
  });
});

describe('datasets', () => {
  const opts = { inputLen: [32, 512] as [number, number], outputLen: [64, 256] as [number, number], vocabSize: 1000, seed: 1 };

  it('random: token ids for completions, words for chat, lengths in range, by seed', () => {
    const a = randomPrompts(500, opts, '/v1/completions');
    expect(randomPrompts(500, opts, '/v1/completions')).toEqual(a);
    expect(randomPrompts(500, { ...opts, seed: 2 }, '/v1/completions')).not.toEqual(a);
    for (const p of a) {
      const ids = p.prompt as number[];
      expect(ids).toHaveLength(p.promptTokens);
      expect(Math.min(...ids)).toBeGreaterThanOrEqual(RANDOM_TOKEN_MIN);
      expect(Math.max(...ids)).toBeLessThan(1000);
      expect(p.outputTokens).toBeGreaterThanOrEqual(64);
      expect(p.outputTokens).toBeLessThanOrEqual(256);
    }
    expect(Math.min(...a.map((p) => p.promptTokens))).toBeLessThan(60);
    expect(Math.max(...a.map((p) => p.promptTokens))).toBeGreaterThan(480);
    const chat = randomPrompts(3, opts, '/v1/chat/completions');
    expect(chat.map((p) => p.outputTokens)).toEqual(a.slice(0, 3).map((p) => p.outputTokens)); // same lengths
    for (const p of chat) expect((p.prompt as string).split(' ')).toHaveLength(p.promptTokens);
  });

  it('article: the 5 prompts cycled; sharegpt: first turns, shuffled by seed, kept by length', async () => {
    expect(articlePrompts(7, 9).map((p) => p.prompt)).toEqual([...ARTICLE_PROMPTS, ...ARTICLE_PROMPTS.slice(0, 2)]);
    expect(approxTokens('写一首诗')).toBe(4);
    expect(approxTokens('abcdefgh')).toBe(2);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sharegpt-'));
    const file = path.join(dir, 'sg.json');
    const conv = (q: string, a: string) => ({ conversations: [{ from: 'human', value: q }, { from: 'gpt', value: a }] });
    await writeFile(file, JSON.stringify([conv('one question here please', 'a reply long enough to keep'), conv('hi', 'too short a prompt'), { conversations: [{ from: 'human', value: 'alone' }] }, conv('another question to ask now', 'and its answer, long too')]));
    const ps = await shareGptPrompts(6, file, 3);
    expect(new Set(ps.map((p) => p.prompt))).toEqual(new Set(['one question here please', 'another question to ask now']));
    expect(ps[0]!.prompt).toBe(ps[2]!.prompt); // cycled
    expect((await shareGptPrompts(2, file, 3, 50)).every((p) => p.outputTokens === 50)).toBe(true);
    await rm(dir, { recursive: true });
  });

  it('rng is uniform enough to draw lengths', () => {
    const next = rng(1);
    const xs = Array.from({ length: 10000 }, next);
    expect(mean(xs)).toBeGreaterThan(0.48);
    expect(mean(xs)).toBeLessThan(0.52);
  });
});
