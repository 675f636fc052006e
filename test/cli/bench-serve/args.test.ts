// bench serve's flags: vLLM's names and syntax (--goodput ttft:200 tpot:10, --request-rate inf,
// --random-range-ratio), the sweep lists, and usage errors for what it cannot honour.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/cli/args.js';
import { parseBenchServeArgs, type BenchServeOptions } from '../../../src/cli/bench-serve/args.js';

const parse = (argv: string[], env = {}) => parseBenchServeArgs(argv, env) as BenchServeOptions;

describe('bench serve args', () => {
  it("has vLLM's defaults", () => {
    const o = parse([]);
    expect(o).toMatchObject({ baseUrl: 'http://127.0.0.1:8000', endpoint: '/v1/completions', dataset: 'random', inputLen: [1024, 1024], outputLen: [128, 128], numPrompts: [1000], maxConcurrency: [null], requestRate: Infinity, burstiness: 1, seed: 0, stream: true, ignoreEos: false, temperature: 0, numWarmups: 1, goodput: {} });
    expect(o.model).toBeUndefined();
    expect(o.numWorkers).toBeUndefined();
  });

  it('reads the goodput SLOs as vLLM writes them, and as repeated or quoted flags', () => {
    expect(parse(['--goodput', 'ttft:200', 'tpot:10', '--seed', '1']).goodput).toEqual({ ttft: 200, tpot: 10 });
    expect(parse(['--goodput', 'ttft:200 e2el:5000']).goodput).toEqual({ ttft: 200, e2el: 5000 });
    expect(parse(['--goodput=tpot:1.5', '--goodput', 'ttft:3']).goodput).toEqual({ tpot: 1.5, ttft: 3 });
    expect(() => parse(['--goodput', 'latency:3'])).toThrow(/KEY:MS/);
    expect(() => parse(['ttft:200'])).toThrow(UsageError); // a bare SLO needs its --goodput
  });

  it('sweeps concurrency with one prompt count for all levels or one per level', () => {
    expect(parse(['--max-concurrency', '1,8,64']).numPrompts).toEqual([1000, 1000, 1000]);
    const o = parse(['--max-concurrency', '1,64', '--num-prompts', '16,192']);
    expect(o.maxConcurrency).toEqual([1, 64]);
    expect(o.numPrompts).toEqual([16, 192]);
    expect(() => parse(['--max-concurrency', '1,64', '--num-prompts', '1,2,3'])).toThrow(/one per level/);
    expect(() => parse(['--max-concurrency', '0'])).toThrow(UsageError);
  });

  it('draws lengths from the range ratio as vLLM, or from MIN-MAX', () => {
    expect(parse(['--random-input-len', '100', '--random-range-ratio', '0.5']).inputLen).toEqual([50, 150]);
    expect(parse(['--random-input-len', '32-512', '--random-output-len', '64-256']).inputLen).toEqual([32, 512]);
    expect(parse(['--random-output-len', '64-256']).outputLen).toEqual([64, 256]);
    expect(() => parse(['--random-range-ratio', '1'])).toThrow(/\[0, 1\)/);
    expect(() => parse(['--random-input-len', '9-3'])).toThrow(UsageError);
  });

  it('takes inf or a rate, no-stream, the API key from the environment, and refuses what it cannot do', () => {
    expect(parse(['--request-rate', 'inf']).requestRate).toBe(Infinity);
    expect(parse(['--request-rate', '12.5']).requestRate).toBe(12.5);
    expect(parse(['--no-stream']).stream).toBe(false);
    expect(parse([], { OPENAI_API_KEY: 'k' }).apiKey).toBe('k');
    expect(parse(['--base-url', 'http://h:1/v1/']).baseUrl).toBe('http://h:1');
    expect(() => parse(['--request-rate', '0'])).toThrow(UsageError);
    expect(() => parse(['--endpoint', '/v1/embeddings'])).toThrow(/endpoint/);
    expect(() => parse(['--dataset-name', 'sharegpt'])).toThrow(/--dataset-path/);
    expect(() => parse(['--dataset-name', 'sonnet'])).toThrow(UsageError);
    expect(() => parse(['--max-concurency', '4'])).toThrow(/did you mean --max-concurrency/);
    expect(parseBenchServeArgs(['--help'])).toBe('help');
  });
});

describe('bench serve in bench/README.md', () => {
  it('has its flag table, generated from the table --help prints; README.md only points there', async () => {
    const { readFileSync } = await import('node:fs');
    const { BENCH_END_MARKER, BENCH_README_FILE, BENCH_START_MARKER, README_FILE, renderBenchServeFlagTable, withBenchServeFlagTable } = await import('../../../scripts/gen-readme-flags.js');
    const { BENCH_SERVE_FLAGS, BENCH_SERVE_HELP } = await import('../../../src/cli/bench-serve/args.js');
    const doc = readFileSync(BENCH_README_FILE, 'utf8');
    const start = doc.indexOf(BENCH_START_MARKER);
    const end = doc.indexOf(BENCH_END_MARKER);
    expect(start >= 0 && end > start, 'bench/README.md lost the bench serve table markers').toBe(true);
    expect(doc.slice(start + BENCH_START_MARKER.length, end).trim(), 'run `npm run docs`').toBe(renderBenchServeFlagTable());
    expect(withBenchServeFlagTable(doc)).toBe(doc);
    const readme = readFileSync(README_FILE, 'utf8');
    expect(readme).not.toContain(BENCH_START_MARKER);
    expect(readme).toContain('bench/README.md#bench-serve-flags');
    expect(renderBenchServeFlagTable().split('\n')).toHaveLength(2 + BENCH_SERVE_FLAGS.length);
    for (const f of BENCH_SERVE_FLAGS) expect(BENCH_SERVE_HELP).toContain(`--${f.negatable ? '[no-]' : ''}${f.name}`);
    // Help texts state meanings and reasons, never measured figures.
    for (const f of BENCH_SERVE_FLAGS) expect(f.help, `--${f.name}`).not.toMatch(/tok\/s|\d\s*(ms|µs)\b/);
  });
});

describe('bench serve default workers', () => {
  it('uses the main thread up to 64 streams, one more thread per 64, at most half the cores', async () => {
    const os = await import('node:os');
    const { autoWorkers } = await import('../../../src/cli/bench-serve/executor.js');
    const cap = Math.max(1, Math.floor(os.availableParallelism() / 2));
    expect(autoWorkers(1)).toBe(1);
    expect(autoWorkers(64)).toBe(1);
    expect(autoWorkers(65)).toBe(Math.min(cap, 2));
    expect(autoWorkers(512)).toBe(Math.min(cap, 8));
  });
});
