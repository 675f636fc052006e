// bench:serve's A/B order and its perf readers (bench/serve/pairs.ts, sched.ts, cycles.ts) on hand-written input.
import { describe, expect, it } from 'vitest';
import { cpuUse, parseSamples } from '../../bench/serve/cycles.js';
import { permutations } from '../../bench/serve/pairs.js';
import { onCpu, parseSwitches, windowUse } from '../../bench/serve/sched.js';

describe('bench:serve tuples', () => {
  it('rotates through every order of the arms, each once', () => {
    expect(permutations(2)).toEqual([[1, 0], [0, 1]]);
    const three = permutations(3);
    expect(three).toHaveLength(6);
    expect(new Set(three.map((p) => p.join(''))).size).toBe(6);
    for (const p of three) expect([...p].sort()).toEqual([0, 1, 2]);
  });
});

describe('bench:serve --sched', () => {
  // Core 0: thread 10 from t=1000 ms, 20 from 1010, idle from 1030. Core 1: 11 from 1000, 30 from 1020.
  const text = [
    '[000] 1.000000000: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=node next_pid=10 next_prio=120',
    '[001] 1.000000000: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=node next_pid=11 next_prio=120',
    '[000] 1.010000000: prev_comm=node prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=V8 DefaultWorke next_pid=20 next_prio=120',
    '[001] 1.020000000: prev_comm=node prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=cc1plus next_pid=30 next_prio=120',
    '[000] 1.030000000: prev_comm=V8 DefaultWorke prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120',
  ].join('\n');

  it('reads who held each core, names with spaces included', () => {
    const tl = parseSwitches(text);
    expect(tl.cpus).toHaveLength(2);
    expect(tl.names.get(20)).toBe('V8 DefaultWorke');
    const use = onCpu(tl, 1005, 1025);
    expect(use.get(10)).toBeCloseTo(5);
    expect(use.get(20)).toBeCloseTo(15);
    expect(use.get(11)).toBeCloseTo(15);
    expect(use.get(30)).toBeCloseTo(5);
  });

  it('splits a window between the engine (its two busiest threads), the serving threads and the rest', () => {
    const roles = new Map([[10, 'sidecar/node:10'], [11, 'sidecar/node:11'], [20, 'gateway/node:20']]);
    // In [1000, 1030]: thread 10 ran 10 ms, 11 and 20 ran 20 ms each (the two busiest: "the engine").
    const u = windowUse(parseSwitches(text), [{ from: 1000, to: 1030 }], roles);
    expect(u.serving.p50Ms).toBeCloseTo(10);
    expect(u.threads.find((t) => t.thread === 'other processes')?.meanMs).toBeCloseTo(10);
    expect(u.threads.find((t) => t.thread.startsWith('sidecar/node:11'))?.thread).toContain('(engine)');
    expect(u.threads.find((t) => t.thread.startsWith('sidecar/node:10'))?.thread).not.toContain('(engine)');
  });
});

describe('bench:serve --perf', () => {
  it('counts each sample as 0.1 ms of its thread, by GC or the innermost project frame', () => {
    const text = [
      '  7 1.001000000: ',
      '\t  aa v8::internal::Scavenger::Process',
      '\t  bb JS:*handle file:///x/src/gateway/app.ts:1:2',
      '',
      '  7 1.002000000: ',
      '\t  cc JS:*parse file:///x/node_modules/zod/v4/core/schemas.js:1:1',
      '\t  dd JS:*chatHandler file:///x/src/gateway/routes/chat.ts:1:9',
      '',
      '  8 1.500000000: ',
      '\t  ee epoll_pwait',
      '',
    ].join('\n');
    const samples = parseSamples(text);
    expect(samples.map((s) => [s.tid, Math.round(s.at), s.frames.length])).toEqual([[7, 1001, 2], [7, 1002, 2], [8, 1500, 1]]);
    const u = cpuUse(samples, [{ from: 1000, to: 1100 }], new Map([[7, 'gateway/main'], [8, 'sidecar/main']]));
    expect(u.byThread.map((t) => t.thread)).toEqual(['gateway/main']);
    expect(u.byThread[0]!.ms).toBeCloseTo(0.2);
    const what = u.byWhat.get('gateway/main')!.map((r) => r.what).sort();
    expect(what).toEqual(['(GC) Scavenger::Process', 'chatHandler src/gateway/routes/chat.ts:1:9']);
  });
});
