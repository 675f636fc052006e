// /version (vLLM), /ping (SageMaker: answers like /ready) and /v1/embeddings (a clear refusal).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVER_VERSION } from '../../src/gateway/version.js';
import { expectError, setup } from './helpers.js';

describe('probes and refusals', () => {
  it("/version answers vLLM's shape with package.json's version, without an API key", async () => {
    const { get } = setup({ apiKey: 'k' });
    const res = await get('/version');
    expect(res.status).toBe(200);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(await res.json()).toEqual({ version: pkg.version });
    expect(SERVER_VERSION).toBe(pkg.version);
  });

  it('/ping is 200 when ready and 503 while the engine loads or the gateway drains, without an API key', async () => {
    const { get, engine, handle } = setup({ apiKey: 'k' });
    expect((await get('/ping')).status).toBe(200);
    engine.setReady(false);
    expect((await get('/ping')).status).toBe(503);
    engine.setReady(true);
    handle.setDraining(true);
    expect((await get('/ping')).status).toBe(503);
  });

  it('/v1/embeddings says this model serves no embeddings, in the OpenAI error shape', async () => {
    const { post } = setup();
    const err = await expectError(await post('/v1/embeddings', { model: 'm', input: 'hello' }), 400);
    expect(err.message).toMatch(/serves no embeddings/);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBe('model');
  });
});
