// The gateway's warm-up (src/gateway/warm-up.ts) runs its requests on a throwaway app: the real app's
// engine, metrics and log see nothing.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { warmUpGateway } from '../../src/gateway/warm-up.js';
import { FakeEngine } from '../../src/protocol/fake-engine.js';

describe('warmUpGateway', () => {
  it('leaves the real engine, metrics and log untouched, and the app serving', async () => {
    const engine = new FakeEngine();
    const lines: string[] = [];
    const log = (_o: object, m?: string) => void lines.push(m ?? '');
    const handle = createApp({ engine, logger: { info: log, warn: log, error: log } });
    expect(await warmUpGateway(handle)).toBe(4); // every warm-up request ran its route to the end
    expect(engine.submitted).toHaveLength(0);
    expect(lines).toEqual([]);
    expect(handle.metrics.render(null)).not.toMatch(/^http_requests_total\{/m);
    const res = await handle.app.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi', max_tokens: 2 }) });
    expect(res.status).toBe(200);
    expect(engine.submitted).toHaveLength(1);
  });
});
