// The large-input rows of issue #26 against `ernie-edge serve` (tiny formula checkpoint, the e2e test's
// flags), with the victim's longest chunk gap for each and, with PROFILE=DIR, V8 CPU profiles of every
// thread of the gateway and the sidecar (`--cpu-prof`) and their longest busy stretches (./stalls.ts).
//
//   node --import tsx bench/abuse/gap.ts [idle|burn|tokenize|chat|messages ...]   (default: all)
//   PROFILE=/tmp/prof node --import tsx bench/abuse/gap.ts chat
//
// Rows: idle (3 s, the host's own noise), burn (20 s of one core busy in another process), tokenize (4 x /tokenize of a 4 MB prompt), chat (2 x a chat
// of one 4 MB message: a 400 before tokenizing), messages (2 x /tokenize of a 4,096-message chat).
// Prints one JSON object per row; the gaps are comparable within one run only (same host, same load).
import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { stalls } from './stalls.js';
import { drain, postJson, victimGap } from './victim.js';
import { listeningUrl, untilReady } from '../server-url.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const MODEL = 'tiny';
const BIG = 'The quick brown fox jumps over the lazy dog; 0123456789. '.repeat(4e6 / 57);

const ROWS: Record<string, (base: string) => Promise<unknown>> = {
  idle: () => new Promise((r) => setTimeout(r, 3000)),
  // The control for tokenize: one core kept busy by another process for 20 s, no request at all (the
  // tokenizer worker keeps a core busy for as long as the tokenize row runs).
  burn: () =>
    new Promise((resolve) => spawn(process.execPath, ['-e', 'const end = Date.now() + 20000; while (Date.now() < end);'], { stdio: 'ignore' }).once('exit', resolve)),
  tokenize: (base) => {
    const body = JSON.stringify({ model: MODEL, prompt: BIG });
    return Promise.all(Array.from({ length: 4 }, async () => (await drain(await postJson(base, '/tokenize', body))).bytes));
  },
  chat: (base) => {
    const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: BIG }], max_tokens: 4 });
    return Promise.all(Array.from({ length: 2 }, async () => (await postJson(base, '/v1/chat/completions', body)).status));
  },
  messages: (base) => {
    const body = JSON.stringify({ model: MODEL, messages: Array.from({ length: 4096 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` })) });
    return Promise.all(Array.from({ length: 2 }, async () => (await postJson(base, '/tokenize', body)).status));
  },
};

async function main(): Promise<void> {
  const rows = process.argv.slice(2);
  for (const r of rows) if (!ROWS[r]) throw new Error(`unknown row ${r}; rows: ${Object.keys(ROWS).join(', ')}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-abuse-gap-'));
  const golden = path.join(here, '../../test/fixtures/golden');
  const config = JSON.parse(await readFile(path.join(golden, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(golden, 'tokenizer', 'hf', f), path.join(dir, f));
  const profile = process.env.PROFILE;
  const env = { ...process.env, ERNIE_EDGE_CACHE: path.join(dir, 'cache') };
  const bin = path.resolve(here, '../../bin/ernie-edge.js');
  const engineFlags = ['--model', dir, '--served-model-name', MODEL, '--threads', '1', '--kv-cache-memory', '64MiB', '--max-num-seqs', '8', '--max-num-queued-reqs', '4'];
  // Profiled: the two halves as their own processes (`serve` starts its sidecar without node flags).
  const sock = path.join(dir, 'engine.sock');
  const commands = profile
    ? [
        [`--cpu-prof`, `--cpu-prof-dir=${profile}`, bin, 'serve', '--role', 'sidecar', '--engine', `unix:${sock}`, ...engineFlags],
        [`--cpu-prof`, `--cpu-prof-dir=${profile}`, bin, 'serve', '--role', 'gateway', '--engine', `unix:${sock}`, '--port', '0'],
      ]
    : [[bin, 'serve', ...engineFlags, '--port', '0']];
  const children = commands.map((c) => spawn(process.execPath, c, { env, stdio: ['ignore', 'pipe', 'inherit'] }));
  const exited = Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
  const child = children.at(-1)!;
  const base = await listeningUrl(child);
  await untilReady(base, 100);
  for (const row of rows.length ? rows : Object.keys(ROWS)) {
    const t0 = performance.now();
    const { gapMs, gapAtMs, chunks, result } = await victimGap(base, MODEL, () => ROWS[row]!(base));
    console.log(JSON.stringify({ row, gapMs: +gapMs.toFixed(1), gapAtS: +(gapAtMs / 1000).toFixed(2), chunks, seconds: +((performance.now() - t0) / 1000).toFixed(1), result, loadavg: os.loadavg().map((x) => +x.toFixed(1)) }));
  }
  for (const c of children.reverse()) c.kill('SIGTERM');
  await exited;
  await rm(dir, { recursive: true, force: true });
  if (profile) {
    for (const f of (await readdir(profile)).filter((f) => f.endsWith('.cpuprofile'))) {
      const s = stalls(JSON.parse(await readFile(path.join(profile, f), 'utf8')), 50);
      console.log(JSON.stringify({ profile: f, stretchesOver50ms: s.length, longest: s.slice(0, 3) }, null, 1));
    }
  }
}

await main();
