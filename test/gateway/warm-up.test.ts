// The gateway's warm-up (src/gateway/warm-up.ts) builds the real app's router and runs sample bodies
// through the real body reader and request schemas: the engine, metrics and log see nothing.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { warmUpGateway } from '../../src/gateway/warm-up.js';
import type { EngineClient } from '../../src/protocol/engine-client.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

/** The fake client with every EngineClient call recorded by name. */
function recorded(engine: FakeEngineClient): { client: EngineClient; calls: string[] } {
  const calls: string[] = [];
  const client = new Proxy(engine, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { client, calls };
}

describe('warmUpGateway', () => {
  it('builds the router and accepts every sample body, touching no engine, metrics or log; the app then serves', async () => {
    const engine = new FakeEngineClient();
    const { client, calls } = recorded(engine);
    const lines: string[] = [];
    const log = (_o: object, m?: string) => void lines.push(m ?? '');
    const handle = createApp({ engine: client, logger: { info: log, warn: log, error: log } });
    expect(handle.app.router.name).toBe('SmartRouter'); // not built yet: the first match picks and builds one
    expect(await warmUpGateway(handle)).toBe(6); // every sample body passed the reader and its route's schema
    expect(handle.app.router.name).toMatch(/^SmartRouter \+ \w+Router$/);
    expect(calls).toEqual([]);
    expect(lines).toEqual([]);
    expect(handle.metrics.render(null)).not.toMatch(/^http_requests_total\{/m);
    const res = await handle.app.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi', max_tokens: 2 }) });
    expect(res.status).toBe(200);
    expect(engine.submitted).toHaveLength(1);
  });
});
