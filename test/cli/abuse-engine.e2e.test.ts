// Abuse of the engine side (issue #26, rows "4 x /tokenize of a 4 MB prompt beside a stream", "4 MB chat
// contents ending in 400", "4,096-message chats", "--max-num-seqs 8 with 8 prompts x n=16", "a small
// request behind a big one", "burst of 200 against --max-num-queued-reqs 4"), against `ernie-edge serve`
// on the real native engine with a tiny formula checkpoint. Each attack, then the numbers: while the
// attack runs, the longest stretch of CPU work each serving event loop did without yielding (the
// loop probe, src/cli/loop-probe.ts) and the victim stream's tokens, all of them and in order, with its
// longest wall-clock gap reported beside them; the gateway's and the sidecar's RSS back near their
// baseline afterwards; and the limits as the engine's own peak counters report them in /metrics (kept
// at every step and submit, not sampled).
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { GOLDEN } from '../engine/helpers.js';
import { drain, jsonBytes, postJson, VICTIM_PROMPT, victimGap as victimGapOf, type VictimGap } from '../../bench/abuse/victim.js';
import { LOOP_PROBE_ENV, type LoopProbeWindow } from '../../src/cli/loop-probe.js';
import { CliProcess, expectLoopYields, LOOP_STRETCH_MS, pollStatus, removeTempDirs, takeLoopWindow, tempDir } from './process-helpers.js';

const MODEL = 'tiny';
let dir: string;
let proc: CliProcess;
let base: string;
let pids: { gateway: number; sidecar: number };

async function metric(name: string): Promise<number> {
  const lines = (await (await fetch(`${base}/metrics`)).text()).split('\n');
  const line = lines.find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ').at(-1));
}

const post = (p: string, body: unknown, signal?: AbortSignal) => postJson(base, p, body, signal);
const victimGap = <T>(during: () => Promise<T>) => victimGapOf(base, MODEL, during);

/** `serve` on the tiny checkpoint with the e2e flags (and `extra`), the loop probe on; resolves once /ready. */
async function startServe(extra: string[] = []): Promise<{ proc: CliProcess; base: string; pids: { gateway: number; sidecar: number } }> {
  const p = new CliProcess(
    ['serve', '--model', dir, '--served-model-name', MODEL, '--port', '0', '--threads', '1', '--kv-cache-memory', '64MiB', '--max-num-seqs', '8', '--max-num-queued-reqs', '4', ...extra],
    { ERNIE_EDGE_CACHE: tempDir('ernie-cache-'), [LOOP_PROBE_ENV]: '1' },
  );
  const url = await p.baseURL();
  await pollStatus(`${url}/ready`, 200, 60_000);
  return { proc: p, base: url, pids: { gateway: p.child.pid!, sidecar: Number((await p.waitForLog((l) => l.msg === 'sidecar ready')).sidecarPid) } };
}

beforeAll(async () => {
  dir = tempDir('ernie-abuse-');
  const config = JSON.parse(await readFile(path.join(GOLDEN, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(GOLDEN, 'tokenizer', 'hf', f), path.join(dir, f));
  ({ proc, base, pids } = await startServe());
}, 90_000);

afterAll(async () => {
  proc?.kill('SIGTERM');
  await proc?.exited;
  removeTempDirs();
});

// ~4 MB of ordinary text (the attack's size, under the gateway's default 4 MiB body limit).
const BIG = 'The quick brown fox jumps over the lazy dog; 0123456789. '.repeat(4e6 / 57);

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/**
 * What an attack may leave on either half's RSS once it is over: the regression it guards kept +395 MiB
 * on the sidecar after the 4 MB /tokenize row. Node 24 keeps freed heap longer than Node 20: the gap
 * benchmark's rows stayed +66-120 MiB for 60 s (session 19, abuse-gap.json), and a CI run's sidecar
 * +97 MiB for this test's 120 s after the chat rows, against 64 MiB allowed then.
 */
const RSS_RETURN_MIB = 160;

/**
 * Waits until both halves' RSS is within RSS_RETURN_MIB of `baseline` (polled, as readiness is: V8 and
 * the allocator give memory back on their own schedule); fails with the last reading after 120 s.
 */
async function rssBackNear(baseline: Record<'gateway' | 'sidecar', number>): Promise<Record<'gateway' | 'sidecar', number>> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const now = { gateway: rssMiB(pids.gateway), sidecar: rssMiB(pids.sidecar) };
    if (now.gateway - baseline.gateway < RSS_RETURN_MIB && now.sidecar - baseline.sidecar < RSS_RETURN_MIB) return now;
    if (Date.now() > deadline) {
      throw new Error(`RSS not back within ${RSS_RETURN_MIB} MiB of the baseline: gateway ${now.gateway.toFixed(0)} (baseline ${baseline.gateway.toFixed(0)}), sidecar ${now.sidecar.toFixed(0)} (baseline ${baseline.sidecar.toFixed(0)}) MiB`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.runIf(existsSync('/proc/thread-self/schedstat'))('no serving event loop stalls streams', () => {
  // The victim's longest gap with no attack over `ms` (at most 2 minutes): this machine's own
  // scheduling noise (CI runners are shared). Taken right after each attack over as long as the attack
  // took, since the longest gap of a loaded host grows with the window. The first one, before any
  // attack, also warms both halves up for the RSS baseline.
  const idleGap = async (ms: number) => (await victimGap(() => new Promise((r) => setTimeout(r, Math.min(ms, 120_000))))).gapMs;
  let baseline: Record<'gateway' | 'sidecar', number>;
  /** The victim's greedy continuation (what every victim stream must be a prefix of). */
  let reference: number[];
  beforeAll(async () => {
    const gap = await idleGap(3000);
    baseline = { gateway: rssMiB(pids.gateway), sidecar: rssMiB(pids.sidecar) };
    console.log(`[abuse] victim's longest gap with no attack: ${gap.toFixed(1)} ms; RSS after warm-up: gateway ${baseline.gateway.toFixed(0)}, sidecar ${baseline.sidecar.toFixed(0)} MiB`);
    const res = await post('/v1/completions', { model: MODEL, prompt: VICTIM_PROMPT, max_tokens: 1900, temperature: 0, ignore_eos: true, return_token_ids: true });
    reference = ((await res.json()) as { choices: { token_ids: number[] }[] }).choices[0]!.token_ids;
    expect(reference).toHaveLength(1900);
  }, 120_000);

  /**
   * What keeps the victim's gaps short: no event loop on the stream's path makes a pass over a large
   * input. The gateway parses large bodies and encodes large frames in a worker, the sidecar decodes
   * them in one (src/cli/off-thread-codec.ts); tokenizing runs in the sidecar's worker pool at a lower
   * OS priority than the serving threads (src/sidecar/server/thread-priority.ts); ids come back packed
   * (REPLY_IDS, written from the ids' own memory) and the HTTP answer is written in slices. The attack's bodies are serialized before the
   * window, so this process, which timestamps the victim's frames, makes no pass over them either.
   */
  // NOTE: issue #26's target is a victim gap under 200 ms (wall clock). That is the benchmark's figure
  // (bench/abuse/gap.ts, on an idle host): on a loaded 2-core host the victim with NO attack has had
  // longest gaps past 200 ms, its threads runnable but not given a core (bench/results/abuse-gap.json:
  // e2e_session16, e2e_session17). What the design guarantees, and what is asserted here, is the part
  // no load can change: while each attack runs, neither serving event loop (the gateway's, the
  // sidecar's) does more than LOOP_STRETCH_MS of CPU work without getting back to its loop, and the
  // victim gets every token, in order (LOOP_STRETCH_MS: ./process-helpers.ts). The wall gap is reported beside them.
  const VICTIM_GAP_MS = 200;
  const loops = () => Promise.all([takeLoopWindow(proc, pids.gateway), takeLoopWindow(proc, pids.sidecar)]);
  /** Runs `attack` beside the victim, with both loops' probe windows bracketing the attack. */
  const underAttack = async <T>(attack: () => Promise<T>): Promise<VictimGap<T> & { loops: { gateway: LoopProbeWindow; sidecar: LoopProbeWindow }; seconds: number }> => {
    const t0 = performance.now();
    const v = await victimGap(async () => {
      await loops();
      const result = await attack();
      const [gateway, sidecar] = await loops();
      return { result, gateway, sidecar };
    });
    return { ...v, result: v.result.result, loops: { gateway: v.result.gateway, sidecar: v.result.sidecar }, seconds: (performance.now() - t0) / 1000 };
  };
  const expectServingYields = (row: string, run: Awaited<ReturnType<typeof underAttack>>, idle: number) => {
    const { gateway: g, sidecar: s } = run.loops;
    const tokens = run.streams.reduce((a, x) => a + x.ids.length, 0);
    console.log(
      `[abuse] ${row}: longest CPU stretch without yielding: gateway loop ${g.maxCpuMs} ms, sidecar loop ${s.maxCpuMs} ms (bound ${LOOP_STRETCH_MS}); ` +
        `most run-queue wait in one turn: gateway ${g.maxWaitMs}, sidecar ${s.maxWaitMs} ms; victim: ${tokens} tokens over ${run.streams.length} streams, ` +
        `at most ${run.maxFrameTokens} in one chunk, longest gap ${run.gapMs.toFixed(0)} ms (target ${VICTIM_GAP_MS} on an idle host; the victim alone: ${idle.toFixed(0)} ms)`,
    );
    console.log(`[abuse] ${row}: loop windows ${JSON.stringify(run.loops)}`);
    for (const w of [g, s]) expectLoopYields(w);
    expect(run.chunks).toBeGreaterThan(0);
    // Every token, in order: each stream a prefix of the greedy continuation, all of it when it finished.
    for (const st of run.streams) {
      expect(st.ids).toEqual(reference.slice(0, st.ids.length));
      if (st.finish !== null) expect([st.finish, st.ids.length]).toEqual(['length', reference.length]);
    }
    expect(run.streams.slice(0, -1).every((st) => st.finish === 'length')).toBe(true);
  };

  it('4 concurrent /tokenize of a 4 MB prompt: all answered; neither loop stalled; the victim got every token in order; both RSS back near baseline', async () => {
    const bigTokenize = jsonBytes({ model: MODEL, prompt: BIG });
    const run = await underAttack(() =>
      Promise.all(Array.from({ length: 4 }, async () => {
        const res = await post('/tokenize', bigTokenize);
        return { status: res.status, ...(await drain(res)) };
      })),
    );
    const idle = await idleGap(run.seconds * 1000);
    for (const r of run.result) {
      expect(r.status).toBe(200);
      expect(r.head).toMatch(/"max_model_len":2048/);
      expect(Number(/"count":(\d+)/.exec(r.head)?.[1] ?? 0)).toBeGreaterThan(500_000);
    }
    const rss = await rssBackNear(baseline);
    console.log(`[abuse] RSS after the 4 MB /tokenize row: gateway ${rss.gateway.toFixed(0)}, sidecar ${rss.sidecar.toFixed(0)} MiB`);
    expectServingYields(`4 x /tokenize of ${(BIG.length / 1e6).toFixed(1)} M chars`, run, idle);
  }, 600_000);

  it('4 MB chat contents end in a 400 before any tokenizing, and 4,096-message chats are answered; neither loop stalled; the victim got every token in order; both RSS back near baseline', async () => {
    const big = jsonBytes({ model: MODEL, messages: [{ role: 'user', content: BIG }], max_tokens: 4 });
    const many = jsonBytes({ model: MODEL, messages: Array.from({ length: 4096 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}` })) });
    const run = await underAttack(() =>
      Promise.all([
        ...Array.from({ length: 2 }, async () => {
          const res = await post('/v1/chat/completions', big);
          return { status: res.status, body: (await res.json()) as { error: { message: string; param: string } } };
        }),
        ...Array.from({ length: 2 }, async () => {
          const res = await post('/tokenize', many);
          return { status: res.status, body: (await res.json()) as { count: number } };
        }),
      ]),
    );
    const idle = await idleGap(run.seconds * 1000);
    const [a, b, c, d] = run.result as [{ status: number; body: { error: { message: string; param: string } } }, { status: number; body: { error: { message: string; param: string } } }, { status: number; body: { count: number } }, { status: number; body: { count: number } }];
    for (const r of [a, b]) {
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe('messages');
      expect(r.body.error.message).toMatch(/maximum context length is 2048 tokens\. However, the messages has \d+ characters, which encode to at least \d+ tokens/);
    }
    for (const r of [c, d]) {
      expect(r.status).toBe(200);
      expect(r.body.count).toBeGreaterThan(4096 * 3);
    }
    const rss = await rssBackNear(baseline);
    console.log(`[abuse] RSS after the chat rows: gateway ${rss.gateway.toFixed(0)}, sidecar ${rss.sidecar.toFixed(0)} MiB`);
    expectServingYields('2 x 4 MB chats + 2 x 4,096-message chats', run, idle);
  }, 300_000);

  it('the probe sees a stall: with --tokenizer-pool-size 0 the sidecar tokenizes a 4 MB prompt on its loop, a stretch far above the bound', async () => {
    const inline = await startServe(['--tokenizer-pool-size', '0']);
    try {
      await takeLoopWindow(inline.proc, inline.pids.sidecar);
      const res = await postJson(inline.base, '/tokenize', jsonBytes({ model: MODEL, prompt: BIG }));
      expect(res.status).toBe(200);
      await drain(res);
      const w = await takeLoopWindow(inline.proc, inline.pids.sidecar);
      console.log(`[abuse] inline tokenizing (the regression the bound guards): sidecar loop's longest CPU stretch ${w.maxCpuMs} ms ${JSON.stringify(w)}`);
      expect(w.maxCpuMs).toBeGreaterThan(4 * LOOP_STRETCH_MS);
    } finally {
      inline.proc.kill('SIGTERM');
      await inline.proc.exited;
    }
  }, 180_000);
});

describe('limits that hold (--max-num-seqs 8, --max-num-queued-reqs 4)', () => {
  it('8 prompts x n=16 is a 400 saying why; 2 prompts x n=4 runs, never more than 8 sequences in a step', async () => {
    const prompts = Array.from({ length: 8 }, (_, i) => `prompt ${i}`);
    const refused = await post('/v1/completions', { model: MODEL, prompt: prompts, n: 16, max_tokens: 4 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/8 prompts x n=16 = 128 sequences .* at most 8/);
    const ok = await post('/v1/completions', { model: MODEL, prompt: prompts.slice(0, 2), n: 4, max_tokens: 8, temperature: 0.8 });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { choices: unknown[] }).choices).toHaveLength(8);
    expect(await metric('ernie_edge:num_requests_running_max')).toBeLessThanOrEqual(8);
  });

  it('a small request behind one holding every sequence slot finishes first (fair admission)', async () => {
    const order: string[] = [];
    const big = post('/v1/completions', { model: MODEL, prompt: ['a b c', 'd e f'], n: 4, max_tokens: 400, ignore_eos: true, temperature: 0 }).then(async (r) => {
      expect(r.status).toBe(200);
      await r.json();
      order.push('big');
    });
    // Submitted once the big request's choices are running: its first streamed... the big one is not
    // streamed, so wait on the engine's own count instead.
    while ((await metric('vllm:num_requests_running')) < 8) await new Promise((r) => setImmediate(r));
    const small = post('/v1/completions', { model: MODEL, prompt: 'hello', max_tokens: 4, temperature: 0 }).then(async (r) => {
      expect(r.status).toBe(200);
      await r.json();
      order.push('small');
    });
    await Promise.all([big, small]);
    expect(order).toEqual(['small', 'big']);
    expect(await metric('ernie_edge:fair_preemptions_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('ernie_edge:num_requests_running_max')).toBeLessThanOrEqual(8);
  }, 120_000);

  it('a burst of 200 against --max-num-queued-reqs 4: never more than 4 waiting, the rest 429 in the OpenAI shape', async () => {
    const res = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const r = await post('/v1/completions', { model: MODEL, prompt: `burst ${i}`, max_tokens: 64, ignore_eos: true });
        return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as { choices?: unknown[]; error?: { type: string; code: number | string; message: string } } };
      }),
    );
    const ok = res.filter((r) => r.status === 200);
    const full = res.filter((r) => r.status === 429);
    console.log(`[abuse] burst of 200: ${ok.length} served, ${full.length} x 429`);
    expect(ok.length + full.length).toBe(200);
    expect(ok.length).toBeGreaterThanOrEqual(4);
    expect(full.length).toBeGreaterThan(0);
    for (const r of full) {
      expect(r.retryAfter).not.toBeNull();
      expect(r.body.error).toMatchObject({ message: expect.stringMatching(/4 requests are already waiting/) });
    }
    expect(await metric('ernie_edge:num_requests_waiting_max')).toBe(4);
    expect(await metric('ernie_edge:num_requests_running_max')).toBeLessThanOrEqual(8);
  }, 120_000);
});
