// `ernie-edge bench serve` as a process against a real `ernie-edge serve` (fake engine: no weights):
// ignore_eos makes every request generate its max_tokens, so the report's output tokens must be the
// dataset's exact total, equal to what the server counted (vllm:generation_tokens_total); chat and
// completions, streamed and not, a two-level sweep in one JSON and one SVG.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseBenchServeArgs, type BenchServeOptions } from '../../../src/cli/bench-serve/args.js';
import { buildDataset } from '../../../src/cli/bench-serve/dataset.js';
import { parsePromText, sumOf } from '../../../src/cli/prom-parse.js';
import { BIN, CliProcess, FAKE_BIN, fakeEnv, pollStatus, removeTempDirs, tempDir } from '../process-helpers.js';
import { readResult, svgPoints } from './helpers.js';

let server: CliProcess;
let base: string;
beforeAll(async () => {
  server = new CliProcess(['serve', '--port', '0', '--max-num-seqs', '8'], fakeEnv(tempDir('ernie-bench-cache-')), FAKE_BIN);
  base = await server.baseURL();
  await pollStatus(`${base}/ready`, 200);
});
afterAll(async () => {
  server.kill('SIGKILL');
  await server.exited;
  removeTempDirs();
});

function benchCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'bench', 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) => resolve({ code, out, err }));
  });
}

const generated = async () => sumOf(parsePromText(await (await fetch(`${base}/metrics`)).text()), 'vllm:generation_tokens_total') ?? NaN;

describe('bench serve against ernie-edge serve', () => {
  for (const [endpoint, stream] of [['/v1/completions', true], ['/v1/chat/completions', false]] as const) {
    it(`${endpoint}, ${stream ? 'streaming' : 'not streaming'}: output tokens are the dataset's, as the server counted`, async () => {
      const dir = tempDir('bench-serve-e2e-');
      const args = ['--base-url', base, '--endpoint', endpoint, '--random-input-len', '8-40', '--random-output-len', '4-12', '--random-vocab-size', '3000', '--num-prompts', '12,20', '--max-concurrency', '1,6', '--ignore-eos', '--seed', '4', ...(stream ? [] : ['--no-stream'])];
      const before = await generated();
      const run = await benchCli([...args, '--save-result', '--result-dir', dir, '--result-filename', 'r.json']);
      expect(run.code, run.err + run.out).toBe(0);
      expect(run.err).toBe(''); // no progress bar on a pipe
      const { json, svg } = await readResult(dir, 'r');
      const levels = await buildDataset(parseBenchServeArgs(args) as BenchServeOptions);
      const expected = levels.map((ps) => ps.reduce((a, p) => a + p.outputTokens, 0));
      expect(json.model).toBe('ernie-edge-default');
      expect(json.levels.map((m) => [m.completed, m.failed])).toEqual([[12, 0], [20, 0]]);
      expect(json.levels.map((m) => m.totalOutputTokens)).toEqual(expected);
      expect(json.levels.every((m) => m.usageReported === m.completed)).toBe(true);
      // One warm-up request (at most 16 tokens) and the two levels, all counted by the server.
      const warm = (await generated()) - before - expected[0]! - expected[1]!;
      expect(warm).toBeGreaterThan(0);
      expect(warm).toBeLessThanOrEqual(16);
      if (stream) {
        // ITL is checked against the foreign server (foreign.test.ts), whose chunking is fixed: ours merges
        // the deltas of a reader that fell behind (src/protocol/flow.ts), so on a busy host a short reply
        // may arrive in one chunk and have no inter-token gap at all.
        expect(json.levels[1]!.ttftMs!.p50).toBeLessThan(json.levels[1]!.e2elMs!.p50);
      }
      expect(json.levels[0]!.peakInFlight).toBe(1);
      const tput = svgPoints(svg).filter((p) => p.series === 'output tok/s');
      expect(tput.map((p) => p.x)).toEqual(['1', '6']);
    });
  }

  it('explains usage errors with exit code 2 and an unreachable server with 1', async () => {
    const bad = await benchCli(['--max-concurrency', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--max-concurrency expects integers/);
    const help = await benchCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--goodput');
    const down = await benchCli(['--base-url', 'http://127.0.0.1:9', '--num-prompts', '1']);
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/v1\/models/);
  });

  it("counts the server's 429s when its queue is full, and sends the API key from OPENAI_API_KEY", async () => {
    // One sequence at a time and one waiting: of 6 requests sent at once (40 tokens, 10 ms a step,
    // so the first holds the engine far longer than the burst takes), the third and later get 429.
    const busy = new CliProcess(['serve', '--port', '0', '--max-num-seqs', '1', '--max-num-queued-reqs', '1', '--api-key', 'sekret'], fakeEnv(tempDir('ernie-bench-busy-'), 10), FAKE_BIN);
    try {
      const url = await busy.baseURL();
      await pollStatus(`${url}/ready`, 200);
      const dir = tempDir('bench-serve-429-');
      const args = ['--base-url', url, '--random-input-len', '8', '--random-output-len', '40', '--random-vocab-size', '3000', '--ignore-eos', '--num-prompts', '6', '--max-concurrency', '6', '--num-warmups', '0', '--save-result', '--result-dir', dir, '--result-filename', 'busy.json'];
      const run = await benchCli(args, { OPENAI_API_KEY: 'sekret' });
      expect(run.code, run.err + run.out).toBe(0);
      const m = (await readResult(dir, 'busy')).json.levels[0]!;
      expect(m.completed + m.failed).toBe(6);
      expect(m.errors['429']).toBeGreaterThanOrEqual(1);
      expect(Object.keys(m.errors)).toEqual(['429']);
      expect(m.completed).toBeGreaterThanOrEqual(1);
      expect(m.totalOutputTokens).toBe(40 * m.completed);
      expect(run.out).toMatch(/Failed requests:\s+\d+ \(429: \d+\)/);
      // A wrong key: the model lookup itself is refused.
      const denied = await benchCli(args, { OPENAI_API_KEY: 'wrong' });
      expect(denied.code).toBe(1);
      expect(denied.err).toMatch(/401/);
    } finally {
      busy.kill('SIGKILL');
      await busy.exited;
    }
  });
});
