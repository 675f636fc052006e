// Tokenizer benchmark: encode throughput on mixed Chinese/English text, latency of a 4,000-token prompt,
// and streaming-detokenization cost per token, for both tokenizer forms (the golden test tokenizer: 3,000
// pieces, so more byte fallback than the real 100k vocabulary — a pessimistic mix).
// Run: npm run bench:tokenizer   → prints a table, writes bench/results/tokenizer.json.
// Bounded to a few seconds per figure (the machine is shared).

import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizerBundle, type TokenizerBundle } from '../src/sidecar/tokenizer/index.js';
import { rng as prng } from '../src/cli/bench-serve/rng.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GOLDEN = join(ROOT, 'test/fixtures/golden/tokenizer');
const TARGETS = { encodeMBps: 2, prompt4kMs: 5, streamUsPerToken: 2 };

function corpus(chars: number): string {
  const golden = JSON.parse(readFileSync(join(GOLDEN, 'golden.json'), 'utf8')) as { cases: Array<{ text: string }> };
  const zh = golden.cases.map((c) => c.text).filter((t) => /[\u4e00-\u9fff]/.test(t));
  const en = [
    'The scheduler hands out a token budget each step, so chunked prefill and decode share one code path.',
    'def f(x):\n    return x**2  # code',
    'Each sequence has num_computed_tokens and num_tokens; the block pool is a plain data structure.',
    'Hello world! The tensor is shared across queues; report the signal to the source.',
  ];
  const rand = prng(42);
  let s = '';
  while (s.length < chars) s += (rand() < 0.5 ? zh[Math.floor(rand() * zh.length)]! : en[Math.floor(rand() * en.length)]!) + (rand() < 0.3 ? '\n' : ' ');
  return s;
}

/** Runs fn repeatedly for about `ms` milliseconds; returns the median ms per call. */
function timeIt(fn: () => void, ms: number): number {
  const times: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end || times.length < 5) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

function bench(b: TokenizerBundle) {
  const t = b.tokenizer;
  const text = corpus(200_000);
  const paragraphs = text.match(/[^\n]+\n?/g)!.reduce<string[]>((acc, p) => {
    const last = acc[acc.length - 1];
    if (last !== undefined && last.length < 2000) acc[acc.length - 1] = last + p;
    else acc.push(p);
    return acc;
  }, []);
  const bytes = Buffer.byteLength(text, 'utf8');
  for (let i = 0; i < 3; i++) for (const p of paragraphs) t.encode(p); // warm-up (JIT, pair cache)
  const encodeMs = timeIt(() => {
    for (const p of paragraphs) t.encode(p);
  }, 3000);
  const tokensPerCorpus = paragraphs.reduce((n, p) => n + t.encode(p).length, 0);

  // A 4,000-token prompt: grow the text until it encodes to ≥ 4,000 tokens.
  let lo = 0;
  let prompt = '';
  while (t.encode(prompt).length < 4000) prompt = text.slice(0, (lo += 500));
  const promptTokens = t.encode(prompt).length;
  const promptMs = timeIt(() => t.encode(prompt), 2000);

  // Streaming: one id per push (the worst case), stop strings and special skipping on.
  const ids = paragraphs.slice(0, 40).flatMap((p) => t.encode(p));
  const streamMs = timeIt(() => {
    const d = b.newDetokenizer({ stop: ['\n\nUser:', '<|end_of_sentence|>'], skipSpecialTokens: true });
    for (let i = 0; i < ids.length; i++) d.push([ids[i]!]);
    d.flush();
  }, 2000);
  return {
    kind: t.kind,
    corpusBytes: bytes,
    corpusTokens: tokensPerCorpus,
    encodeMBps: bytes / 1e6 / (encodeMs / 1000),
    prompt4kTokens: promptTokens,
    prompt4kMs: promptMs,
    streamTokens: ids.length,
    streamUsPerToken: (streamMs * 1000) / ids.length,
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ernie-edge-bench-'));
  await copyFile(join(GOLDEN, 'tokenizer.model'), join(dir, 'tokenizer.model'));
  await copyFile(join(GOLDEN, 'hf/tokenizer.json'), join(dir, 'tokenizer.json'));
  await copyFile(join(GOLDEN, 'hf/tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  const results = [];
  for (const prefer of ['sentencepiece', 'json'] as const) results.push(bench(await loadTokenizerBundle(dir, { prefer })));
  const row = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(14) : c.padStart(22))).join('');
  console.log(row(['form', `encode MB/s (≥${TARGETS.encodeMBps})`, `4k prompt ms (<${TARGETS.prompt4kMs})`, `stream µs/tok (<${TARGETS.streamUsPerToken})`]));
  for (const r of results) {
    console.log(row([r.kind, r.encodeMBps.toFixed(2), `${r.prompt4kMs.toFixed(2)} (${r.prompt4kTokens} tok)`, r.streamUsPerToken.toFixed(3)]));
  }
  const out = {
    date: new Date().toISOString(),
    node: process.version,
    tokenizer: 'test/fixtures/golden/tokenizer (3,000-piece ERNIE-shaped BPE)',
    targets: TARGETS,
    results: results.map((r) => ({
      ...r,
      pass: { encodeMBps: r.encodeMBps >= TARGETS.encodeMBps, prompt4kMs: r.prompt4kMs < TARGETS.prompt4kMs, streamUsPerToken: r.streamUsPerToken < TARGETS.streamUsPerToken },
    })),
  };
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  await writeFile(join(ROOT, 'bench/results/tokenizer.json'), JSON.stringify(out, null, 2) + '\n');
}

await main();
