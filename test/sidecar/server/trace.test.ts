// Stage tracing (src/protocol/trace.ts) along one streamed request: gateway app → FramedEngineClient →
// serveEngine → EngineHost → fake native engine and back, every mark present, in path order.
import { describe, expect, it } from 'vitest';
import { memoryTracer } from '../../../src/cli/trace-file.js';
import { createApp } from '../../../src/gateway/app.js';
import { FramedEngineClient } from '../../../src/protocol/framed-client.js';
import { serveEngine } from '../../../src/protocol/serve-engine.js';
import { TRACE_STAGES, type TraceStage } from '../../../src/protocol/trace.js';
import { createTransportPair } from '../../../src/protocol/transport.js';
import { makeHost } from './helpers.js';

describe('trace marks', () => {
  it('memoryTracer keeps the first mark of each (request, stage) and hands them over once', () => {
    const t = memoryTracer();
    t.mark('a', 'gw.recv', 1);
    t.mark('a', 'gw.recv', 2);
    t.mark('b', 'gw.recv', 3);
    expect(t.flush().map((m) => [m.id, m.stage, m.t])).toEqual([['a', 'gw.recv', 1], ['b', 'gw.recv', 3]]);
    expect(t.flush()).toEqual([]);
    t.mark('a', 'gw.recv', 4); // a new flush period starts clean
    expect(t.flush().map((m) => m.t)).toEqual([4]);
  });

  it('a streamed chat request carries every server stage, in path order, under its response id', async () => {
    const tracer = memoryTracer();
    const env = await makeHost({ tracer });
    const [clientEnd, serverEnd] = createTransportPair();
    const served = serveEngine(serverEnd, env.host, { tracer });
    const client = new FramedEngineClient({ connect: async () => clientEnd, tracer });
    const { app } = createApp({ engine: client, tracer });
    const res = await app.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ignore_eos: true, stream: true }),
    });
    expect(res.status).toBe(200);
    while (env.engine.step().length > 0);
    const body = await res.text();
    const id = (JSON.parse(body.split('\n')[0]!.slice('data: '.length)) as { id: string }).id;
    const marks = new Map(tracer.flush().filter((m) => m.id === id).map((m) => [m.stage, m.t]));
    const server = TRACE_STAGES.filter((s) => !s.startsWith('client.'));
    expect([...marks.keys()].sort()).toEqual([...server].sort());
    // Path order (eng.step is an estimate, and `accepted` runs beside the engine: checked apart).
    const chain: TraceStage[] = ['gw.recv', 'gw.body', 'gw.parsed', 'gw.submit', 'sc.recv', 'sc.decoded', 'sc.tokenized', 'sc.submitted', 'sc.step', 'sc.detok', 'sc.delta', 'gw.delta', 'gw.sse'];
    const times = chain.map((s) => marks.get(s)!);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(marks.get('sc.accepted')!).toBeGreaterThanOrEqual(marks.get('sc.submitted')!);
    expect(marks.get('gw.accepted')!).toBeGreaterThanOrEqual(marks.get('sc.accepted')!);
    await client.close();
    await served.done;
  });
});
