// `bench serve` against a server that is not ernie-edge (test/doubles/foreign-openai-server.ts): its
// report agrees with the server's own ledger (requests, errors by status, output tokens as reported in
// usage), with worker threads as without, on both endpoints, streamed and not; the SVG is XML with a
// point per level.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForeignServer, type ForeignBody, type ForeignServer } from '../../doubles/foreign-openai-server.js';
import { removeTempDirs, tempDir } from '../process-helpers.js';
import { benchServe, readResult, svgPoints } from './helpers.js';

// Refuses about 1 in 7 prompts with 429 and 1 in 11 with 500, chosen by the prompt's first token or
// character, so the same requests fail however they interleave.
const key = (b: ForeignBody) => {
  const p = b.prompt ?? b.messages?.[0]?.content ?? '';
  return typeof p === 'string' ? p.charCodeAt(0) + p.length : p[0]! + p.length;
};
const failWith = (b: ForeignBody) => (key(b) % 7 === 0 ? 429 : key(b) % 11 === 0 ? 500 : null);

let server: ForeignServer;
beforeAll(async () => {
  server = await startForeignServer({ failWith });
});
afterAll(async () => {
  await server.close();
  removeTempDirs();
});

const sum = <T>(xs: T[], f: (x: T) => number) => xs.reduce((a, x) => a + f(x), 0);

/** Runs a benchmark, returns its JSON and what the server's ledger gained meanwhile. */
async function measured(args: string[], name: string) {
  const before = structuredClone(server.ledger);
  const dir = tempDir('bench-serve-');
  const run = await benchServe(['--base-url', server.base, '--num-warmups', '0', '--save-result', '--result-dir', dir, '--result-filename', `${name}.json`, ...args]);
  expect(run.code, run.err + run.out).toBe(0);
  const { json, svg } = await readResult(dir, name);
  const l = server.ledger;
  const delta = {
    ok: (l.byStatus[200] ?? 0) - (before.byStatus[200] ?? 0),
    e429: (l.byStatus[429] ?? 0) - (before.byStatus[429] ?? 0),
    e500: (l.byStatus[500] ?? 0) - (before.byStatus[500] ?? 0),
    completionTokens: l.completionTokens - before.completionTokens,
    promptTokens: l.promptTokens - before.promptTokens,
    bodies: l.bodies.slice(before.bodies.length),
  };
  return { json, svg, delta, run };
}

describe('bench serve against a foreign OpenAI-compatible server', () => {
  it('sweeps /v1/completions with token-id prompts: counts, errors by status and usage tokens match the server', async () => {
    const { json, svg, delta, run } = await measured(
      ['--random-input-len', '20-60', '--random-output-len', '5-30', '--num-prompts', '30,45', '--max-concurrency', '1,8', '--seed', '3', '--num-workers', '1'],
      'sweep',
    );
    expect(json.model).toBe('foreign-model'); // the first of /v1/models
    expect(json.levels.map((m) => m.numPrompts)).toEqual([30, 45]);
    expect(json.levels.map((m) => m.maxConcurrency)).toEqual([1, 8]);
    expect(json.levels[0]!.peakInFlight).toBe(1);
    expect(json.levels[1]!.peakInFlight).toBeLessThanOrEqual(8);
    const levels = json.levels;
    expect(delta.ok + delta.e429 + delta.e500).toBe(75);
    expect(delta.e429).toBeGreaterThan(0);
    expect(delta.e500).toBeGreaterThan(0);
    expect(sum(levels, (m) => m.completed)).toBe(delta.ok);
    expect(sum(levels, (m) => m.errors['429'] ?? 0)).toBe(delta.e429);
    expect(sum(levels, (m) => m.errors['500'] ?? 0)).toBe(delta.e500);
    expect(sum(levels, (m) => m.failed)).toBe(delta.e429 + delta.e500);
    expect(sum(levels, (m) => m.totalOutputTokens)).toBe(delta.completionTokens);
    expect(sum(levels, (m) => m.totalInputTokens)).toBe(delta.promptTokens);
    expect(sum(levels, (m) => m.usageReported)).toBe(delta.ok);
    // Prompts went as token ids in the asked range, each level on fresh prompts, streamed with usage.
    for (const b of delta.bodies) {
      expect(Array.isArray(b.prompt)).toBe(true);
      expect((b.prompt as number[]).length).toBeGreaterThanOrEqual(20);
      expect((b.prompt as number[]).length).toBeLessThanOrEqual(60);
      expect(b).toMatchObject({ model: 'foreign-model', stream: true, stream_options: { include_usage: true }, temperature: 0 });
      expect(b.max_tokens).toBeGreaterThanOrEqual(5);
    }
    expect(new Set(delta.bodies.map((b) => JSON.stringify(b.prompt))).size).toBe(75);
    for (const m of levels) {
      expect(m.ttftMs!.p50).toBeGreaterThan(0);
      expect(m.itlMs).not.toBeNull();
      expect(m.e2elMs!.p99).toBeGreaterThanOrEqual(m.e2elMs!.p50);
      expect(m.outputThroughput).toBeCloseTo(m.totalOutputTokens / m.durationS, 6);
      expect(m.client.threads).toBe(1);
      expect(m.client.cpuS).toBeGreaterThan(0);
      expect(m.client.cpuUsPerOutputToken).toBeCloseTo((m.client.cpuS * 1e6) / m.totalOutputTokens, 6);
    }
    expect(run.out).toContain('Serving Benchmark Result');
    expect(run.out).toMatch(/Failed requests:\s+\d+ \((429|500): \d+/);
    // One point per level for each series; the throughput points carry the JSON's figures.
    const points = svgPoints(svg);
    const tput = points.filter((p) => p.series === 'output tok/s');
    expect(tput.map((p) => p.x)).toEqual(['1', '8']);
    expect(tput.map((p) => p.y)).toEqual(levels.map((m) => m.outputThroughput));
    expect(points.filter((p) => p.series === 'TTFT p50')).toHaveLength(2);
  });

  it('gives the same totals over worker threads', async () => {
    const args = ['--random-input-len', '10-40', '--random-output-len', '3-20', '--num-prompts', '60', '--max-concurrency', '16', '--seed', '5'];
    const one = await measured([...args, '--num-workers', '1'], 'one');
    const three = await measured([...args, '--num-workers', '3'], 'three');
    expect(three.json.levels[0]!.client.threads).toBe(3);
    expect(three.json.levels[0]!.client.threadUtilisation).toHaveLength(4); // the main thread and 3 workers
    const totals = (m: (typeof one.json.levels)[0]) => ({ completed: m.completed, failed: m.failed, errors: m.errors, out: m.totalOutputTokens, in: m.totalInputTokens });
    expect(totals(three.json.levels[0]!)).toEqual(totals(one.json.levels[0]!));
    expect(three.json.levels[0]!.totalOutputTokens).toBe(three.delta.completionTokens);
    expect(three.delta.bodies.map((b) => JSON.stringify(b.prompt)).sort()).toEqual(one.delta.bodies.map((b) => JSON.stringify(b.prompt)).sort());
  });

  it('runs chat without streaming on the article prompts, and scores goodput against SLOs', async () => {
    const { json, delta } = await measured(
      ['--endpoint', '/v1/chat/completions', '--dataset-name', 'article', '--article-output-len', '12', '--no-stream', '--num-prompts', '10', '--max-concurrency', '4', '--goodput', 'e2el:600000', 'ttft:600000'],
      'chat',
    );
    const m = json.levels[0]!;
    expect(json.stream).toBe(false);
    expect(json.goodput).toEqual({ e2el: 600000, ttft: 600000 });
    expect(m.completed + m.failed).toBe(10);
    expect(m.completed).toBe(delta.ok);
    expect(m.totalOutputTokens).toBe(delta.completionTokens);
    expect(m.goodRequests).toBe(m.completed); // every request well inside 10 minutes
    expect(m.itlMs).toBeNull(); // no stream, no inter-token latency
    expect(m.ttftMs!.p50).toBeCloseTo(m.e2elMs!.p50, 6);
    expect(delta.bodies.every((b) => b.stream === false && Array.isArray(b.messages))).toBe(true);
    expect(new Set(delta.bodies.map((b) => (b.messages as { content: string }[])[0]!.content)).size).toBe(5);

    const strict = await measured(['--endpoint', '/v1/chat/completions', '--dataset-name', 'article', '--article-output-len', '4', '--num-prompts', '5', '--goodput', 'ttft:0'], 'strict');
    expect(strict.json.levels[0]!.goodRequests).toBe(0);
    expect(strict.json.levels[0]!.requestGoodput).toBe(0);
  });

  it('sends each request no earlier than its seeded Poisson arrival', async () => {
    const { json } = await measured(['--random-input-len', '8', '--random-output-len', '4', '--num-prompts', '20', '--request-rate', '200', '--seed', '9', '--save-detailed'], 'poisson');
    const { arrivalOffsetsMs, subSeed } = await import('../../../src/cli/bench-serve/rng.js');
    const planned = arrivalOffsetsMs(20, 200, 1, subSeed(9, 100));
    const starts = json.levels[0]!.requests!.map((r) => r.startMs);
    starts.forEach((s, i) => expect(s).toBeGreaterThanOrEqual(planned[i]!));
    expect(json.requestRate).toBe(200);
  });

  it('with --return-token-ids counts a chunk whose text is still empty as a token arrival, exactly, without usage', async () => {
    // Each stream's first 3 tokens decode to no text: only their ids say they arrived.
    const silent = await startForeignServer({ noUsage: true, silentTokens: 3 });
    const dir = tempDir('token-ids-');
    try {
      const run = async (name: string, extra: string[]) => {
        const r = await benchServe(['--base-url', silent.base, '--random-input-len', '10-20', '--random-output-len', '8-16', '--num-prompts', '5', '--num-warmups', '0', '--ignore-eos', '--save-result', '--result-dir', dir, '--result-filename', `${name}.json`, ...extra]);
        expect(r.code, r.err).toBe(0);
        return (await readResult(dir, name)).json;
      };
      const before = silent.ledger.completionTokens;
      const plain = await run('plain', []);
      const generated = silent.ledger.completionTokens - before;
      // Text alone misses the silent tokens: 3 per request.
      expect(plain.levels[0]!.totalOutputTokens).toBe(generated - 5 * 3);
      const ids = await run('ids', ['--return-token-ids']);
      expect(silent.ledger.bodies.at(-1)).toMatchObject({ return_token_ids: true });
      expect(ids.returnTokenIds).toBe(true);
      expect(ids.levels[0]!.usageReported).toBe(0);
      expect(ids.levels[0]!.totalOutputTokens).toBe(silent.ledger.completionTokens - before - generated);
      expect(ids.levels[0]!.totalOutputTokens).toBe(generated); // same seed, same lengths
    } finally {
      await silent.close();
    }
  });

  it('streams chat on a ShareGPT file (first turns as user messages), and counts chunks where a server reports no usage', async () => {
    const dir = tempDir('sharegpt-');
    const file = path.join(dir, 'sg.json');
    const conv = (q: string, a: string) => ({ conversations: [{ from: 'human', value: q }, { from: 'gpt', value: a }, { from: 'human', value: 'and then?' }] });
    await writeFile(file, JSON.stringify([conv('What is a paged KV cache, in short?', 'Blocks of keys and values, allocated on demand.'), conv('请解释一下连续批处理。', '每一步都可以加入新的请求，不必等待整批结束。')]));
    const { json, delta } = await measured(['--endpoint', '/v1/chat/completions', '--dataset-name', 'sharegpt', '--dataset-path', file, '--num-prompts', '6', '--max-concurrency', '2'], 'sharegpt');
    const m = json.levels[0]!;
    expect(m.completed + m.failed).toBe(6);
    expect(m.completed).toBe(delta.ok);
    expect(m.totalOutputTokens).toBe(delta.completionTokens);
    expect(new Set(delta.bodies.map((b) => (b.messages as { content: string }[])[0]!.content))).toEqual(new Set(['What is a paged KV cache, in short?', '请解释一下连续批处理。']));
    expect(m.ttftMs!.p50).toBeGreaterThan(0);
    expect(json.dataset).toMatchObject({ name: 'sharegpt', path: file });

    // A server that reports no usage: its token chunks are counted, and the role-only chunk before
    // them is not one (the count equals what it generated exactly).
    const bare = await startForeignServer({ noUsage: true });
    try {
      const run = await benchServe(['--base-url', bare.base, '--endpoint', '/v1/chat/completions', '--dataset-name', 'sharegpt', '--dataset-path', file, '--num-prompts', '4', '--num-warmups', '0', '--save-result', '--result-dir', dir, '--result-filename', 'bare.json']);
      expect(run.code, run.err).toBe(0);
      const b = (await readResult(dir, 'bare')).json.levels[0]!;
      expect(b.completed).toBe(4);
      expect(b.usageReported).toBe(0);
      expect(b.totalOutputTokens).toBe(bare.ledger.completionTokens);
      expect(run.out).toContain('4 requests without usage: chunks counted');
    } finally {
      await bare.close();
    }
  });
});
