// Property tests with a seeded PRNG (the seed is in the test name, so a failure reproduces):
// round trips for both forms, and streaming == full decode over random splits of the ids.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { GOLDEN_FILES, makeCheckpoint, prng, randomChunks, randomText, removeCheckpoints } from './helpers.js';

afterAll(removeCheckpoints);

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];
const PER_SEED = 60;
const bundles: Record<'sentencepiece' | 'hf-json', TokenizerBundle> = {} as Record<'sentencepiece' | 'hf-json', TokenizerBundle>;

beforeAll(async () => {
  const dir = await makeCheckpoint({ 'tokenizer.model': GOLDEN_FILES.model, 'tokenizer.json': GOLDEN_FILES.json, 'tokenizer_config.json': GOLDEN_FILES.config });
  bundles.sentencepiece = await loadTokenizerBundle(dir, { prefer: 'sentencepiece' });
  bundles['hf-json'] = await loadTokenizerBundle(dir, { prefer: 'json' });
});

describe.each(['sentencepiece', 'hf-json'] as const)('%s', (kind) => {
  it.each(SEEDS)('seed %i: decode(encode(s)) == s, trusted and untrusted', (seed) => {
    const t = bundles[kind].tokenizer;
    const rand = prng(seed);
    for (let k = 0; k < PER_SEED; k++) {
      const s = randomText(rand);
      expect(t.decode(t.encode(s)), JSON.stringify(s)).toBe(s);
      const untrusted = t.encode(s, { parseSpecial: false });
      expect(t.decode(untrusted), JSON.stringify(s)).toBe(s);
      for (const id of untrusted) expect(t.specialIds.has(id)).toBe(false);
    }
  });

  it.each(SEEDS)('seed %i: streaming over a random split == full decode, never U+FFFD', (seed) => {
    const b = bundles[kind];
    const rand = prng(1000 + seed);
    for (let k = 0; k < PER_SEED; k++) {
      const s = randomText(rand);
      const ids = b.tokenizer.encode(s, { parseSpecial: false });
      for (const skipSpecialTokens of [false, true]) {
        const d = b.newDetokenizer({ skipSpecialTokens });
        let out = '';
        const pieces: number[] = [];
        for (const chunk of randomChunks(rand, ids)) {
          const r = d.push(chunk);
          expect(r.text).not.toContain('\uFFFD');
          expect(r.stopped).toBeNull();
          pieces.push(...r.tokens.map((x) => x.id));
          out += r.text;
        }
        out += d.flush();
        expect(out, JSON.stringify(s)).toBe(b.tokenizer.decode(ids, { skipSpecialTokens }));
        expect(out).toBe(s);
        expect(pieces).toEqual(ids); // one token report per pushed id, in order
      }
    }
  });

  it.each(SEEDS)('seed %i: stop strings (substrings of the output) never leak, over any split', (seed) => {
    const b = bundles[kind];
    const rand = prng(2000 + seed);
    for (let k = 0; k < PER_SEED; k++) {
      const s = randomText(rand, 16);
      const ids = b.tokenizer.encode(s, { parseSpecial: false });
      const chars = Array.from(s);
      const from = Math.floor(rand() * chars.length);
      const stop = chars.slice(from, from + 1 + Math.floor(rand() * 4)).join('');
      const decoy = stop + '\u00a7never'; // a prefix of it occurs, the whole never does
      const d = b.newDetokenizer({ stop: [decoy, stop] });
      let out = '';
      let stopped: string | null = null;
      for (const chunk of randomChunks(rand, ids)) {
        const r = d.push(chunk);
        out += r.text;
        if (r.stopped) {
          expect(stopped).toBeNull();
          stopped = r.stopped.stop;
        }
      }
      out += d.flush();
      const at = s.indexOf(stop);
      expect(stopped, JSON.stringify({ s, stop })).toBe(stop);
      expect(out, JSON.stringify({ s, stop })).toBe(s.slice(0, at));
    }
  });
});
