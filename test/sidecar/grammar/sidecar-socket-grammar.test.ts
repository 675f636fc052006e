// A constrained SUBMIT through the real sidecar (startSidecar with the native engine factory) over its
// Unix socket: the tiny config with formula weights and the test tokenizer, the wire protocol's
// Constraint as the gateway sends it. Streamed output matches the constraint; a schema that does not
// compile comes back as INVALID_REQUEST naming its param.
import { copyFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type EngineClient, type EngineEvent, type SubmitRequest } from '../../../src/protocol/engine-client.js';
import { createUnixEngineClient } from '../../../src/protocol/node-socket.js';
import { nativeEngineFactory } from '../../../src/sidecar/engine/factory.js';
import { startSidecar, type RunningSidecar } from '../../../src/sidecar/main.js';
import { chatCheckpoint } from '../../gateway/real-engine.js';
import { choice, request } from '../server/helpers.js';

const HF = fileURLToPath(new URL('../../fixtures/golden/tokenizer/hf', import.meta.url));
const quiet = { info() {}, warn() {}, error() {} };
let sc: RunningSidecar;
let client: EngineClient & { close(): Promise<void> };

beforeAll(async () => {
  const dir = await chatCheckpoint();
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(HF, f), path.join(dir, f));
  const sock = path.join(mkdtempSync(path.join(os.tmpdir(), 'ernie-sc-')), 'engine.sock');
  sc = await startSidecar(
    { model: dir, maxModelLen: 512, engine: { maxNumSeqs: 8, enablePrefixCaching: true, seed: 0 }, blockSize: 16, kvCacheMemory: 64 << 20, threads: 2, device: 'cpu', maxNumQueuedReqs: 8, listen: [{ kind: 'unix', path: sock }] },
    { logger: quiet, factory: nativeEngineFactory },
  );
  await sc.loaded;
  client = createUnixEngineClient(sock);
});
afterAll(async () => {
  await client?.close();
  await sc?.close(1000);
});

async function stream(req: SubmitRequest): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const ev of client.stream(req)) events.push(ev);
  return events;
}

describe('constrained SUBMIT through the sidecar socket (native engine, random logits)', () => {
  it('json_schema (n = 2, sampled) and regex outputs match', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 1, maximum: 99 }, s: { enum: ['x', 'y z'] } }, required: ['ok', 'n', 's'], additionalProperties: false };
    const validate = new Ajv().compile(schema);
    const events = await stream({ ...request({ n: 2, sampling: { maxTokens: 100, temperature: 1, seed: 3 } }), constraint: { kind: 'json_schema', schema: JSON.stringify(schema), param: 'response_format.json_schema.schema' } });
    for (const i of [0, 1]) {
      const c = choice(events, i);
      expect(c.last.finishReason, c.text).toBe('stop');
      expect(validate(JSON.parse(c.text)), c.text).toBe(true);
    }
    const re = await stream({ ...request({ sampling: { maxTokens: 40, temperature: 1, seed: 4 } }), constraint: { kind: 'regex', pattern: '(cat|dog)s? [0-9]{2}', param: 'structured_outputs.regex' } });
    expect(choice(re).text).toMatch(/^(cat|dog)s? [0-9]{2}$/);
  });

  it('a schema that does not compile is INVALID_REQUEST with its param', async () => {
    const err = await stream({ ...request(), constraint: { kind: 'json_schema', schema: '{"type": 12}', param: 'response_format.json_schema.schema' } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', param: 'response_format.json_schema.schema' });
  });
});
