// ≥ 2,000 hostile requests from a seeded PRNG: every one must get a 4xx in OpenAI's error shape,
// never a 5xx, and a valid request must still succeed afterwards.
import { describe, expect, it } from 'vitest';
import { MODEL, setup } from './helpers.js';
import { generateCases } from './fuzz-cases.js';

describe('fuzz: hostile requests', () => {
  it('2,400 seeded malformed requests all get a 4xx OpenAI error; a valid request still works', async () => {
    const { handle, post, engine } = setup();
    const cases = generateCases(2400, 0xe41e);
    const statuses = new Map<number, number>();
    for (const [i, c] of cases.entries()) {
      const headers: Record<string, string> = {};
      if (c.contentType) headers['content-type'] = c.contentType;
      const method = c.method ?? 'POST';
      const res = await handle.app.request(c.path, { method, headers, body: method === 'GET' ? undefined : (c.body as BodyInit) });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      const where = `case ${i}: ${method} ${c.path} ${typeof c.body === 'string' ? c.body.slice(0, 200) : '<bytes>'} → ${res.status} ${text.slice(0, 200)}`;
      if (res.status < 400 || res.status > 499) expect.fail(where);
      const body = JSON.parse(text) as { error?: Record<string, unknown> };
      if (!body.error || typeof body.error.message !== 'string' || typeof body.error.type !== 'string' || !('param' in body.error) || !('code' in body.error)) {
        expect.fail(`bad error shape: ${where}`);
      }
    }
    // the generator really exercised several failure classes
    expect(statuses.get(400)).toBeGreaterThan(1000);
    for (const s of [404, 405, 415]) expect(statuses.get(s) ?? 0).toBeGreaterThan(0);
    expect(engine.active).toBe(0);
    const ok = await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'still alive?' }], max_tokens: 3 });
    expect(ok.status).toBe(200);
  });
});
