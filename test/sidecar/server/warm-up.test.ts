// The sidecar's warm-up (src/sidecar/server/warm-up.ts): one request through the protocol, template,
// tokenizer and engine before /ready turns 200 — and what happens when it cannot run or fails.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/gateway/app.js';
import { createUnixEngineClient } from '../../../src/protocol/node-socket.js';
import type { EngineFactory } from '../../../src/sidecar/engine/factory.js';
import { fakeNativeEngineFactory } from '../../doubles/fake-native-engine-factory.js';
import { Finish, type EngineRequest, type NativeEngine } from '../../../src/sidecar/engine/native-engine.js';
import { startSidecar, type SidecarOptions } from '../../../src/sidecar/main.js';
import { WARM_UP_REQUEST } from '../../../src/sidecar/server/warm-up.js';

const tmp = (p: string) => mkdtempSync(path.join(os.tmpdir(), p));

/**
 * The fake engine behind a gate: requests are recorded at once (`firstSeen` resolves on the first)
 * and reach the engine when `open()` is called.
 */
function gatedFactory(opts: { failAll?: boolean } = {}) {
  const seen: EngineRequest[] = [];
  let first!: () => void;
  const firstSeen = new Promise<void>((r) => (first = r));
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const inner = fakeNativeEngineFactory();
  const factory: EngineFactory = {
    kind: 'fake',
    readCheckpoint: (dir) => inner.readCheckpoint(dir),
    resolveDevice: (choice, lib) => inner.resolveDevice(choice, lib),
    async create(checkpoint, plan, engine, bundle, onStep) {
      const e = await inner.create(checkpoint, plan, engine, bundle, (outs) =>
        onStep(opts.failAll ? outs.map((o) => ({ ...o, tokens: new Int32Array(0), finish: Finish.Error, error: 'kernel failure' })) : outs),
      );
      const gated: NativeEngine = {
        submit(r) {
          seen.push(r);
          first();
          void gate.then(() => e.submit(r));
          return null;
        },
        abort: (id) => e.abort(id),
        pause: (id, paused) => e.pause(id, paused),
        stats: () => e.stats(),
        waitingCount: () => e.waitingCount(),
        close: () => e.close(),
      };
      return gated;
    },
  };
  return { factory, seen, firstSeen, open: () => open() };
}

function logLines() {
  const lines: string[] = [];
  const log = (_o: object, m?: string) => void lines.push(m ?? '');
  return { lines, logger: { info: log, warn: log, error: log } };
}

const options = (sock: string, over: Partial<SidecarOptions> = {}): SidecarOptions => ({
  engine: { maxNumSeqs: 8, maxNumBatchedTokens: 256, enablePrefixCaching: true, seed: 0 },
  blockSize: 16,
  maxNumQueuedReqs: 8,
  listen: [{ kind: 'unix', path: sock }],
  ...over,
});

describe('sidecar warm-up', () => {
  let savedCache: string | undefined;
  beforeEach(() => {
    savedCache = process.env.ERNIE_EDGE_CACHE;
    process.env.ERNIE_EDGE_CACHE = tmp('ernie-cache-'); // the embedded default model's cache root
  });
  afterEach(() => {
    if (savedCache === undefined) delete process.env.ERNIE_EDGE_CACHE;
    else process.env.ERNIE_EDGE_CACHE = savedCache;
  });

  it('/ready stays 503 ("warming up") until the warm-up request has run through the engine, then 200', async () => {
    const sock = path.join(tmp('ernie-wu-'), 'engine.sock');
    const { factory, seen, firstSeen, open } = gatedFactory();
    const { lines, logger } = logLines();
    const sc = await startSidecar(options(sock), { logger, factory });
    const client = createUnixEngineClient(sock, { retry: { attempts: 1 } });
    const { app } = createApp({ engine: client });
    await firstSeen;
    // The warm-up request is in the engine (held by the gate): the sidecar is loaded but not ready.
    expect(seen.map((r) => r.maxTokens)).toEqual([WARM_UP_REQUEST.sampling.maxTokens]);
    expect(seen[0]!.prompt.length).toBeGreaterThan(5); // a chat prompt through the template, not a stub
    const warming = await app.request('/ready');
    expect(warming.status).toBe(503);
    expect(await warming.json()).toMatchObject({ ready: false, message: expect.stringMatching(/not ready: warming up/) });
    expect(lines).not.toContain('ready');
    open();
    await sc.loaded;
    expect((await app.request('/ready')).status).toBe(200);
    const warmed = lines.findIndex((l) => /^warm-up request done/.test(l));
    expect(warmed).toBeGreaterThan(-1);
    expect(lines.indexOf('ready')).toBeGreaterThan(warmed);
    expect(seen).toHaveLength(1); // nothing but the warm-up ran before ready
    await client.close();
    await sc.close(1000);
  });

  it('is skipped with a warning when the model cannot take it (tiny --max-model-len), and the sidecar serves', async () => {
    const sock = path.join(tmp('ernie-wu-'), 'engine.sock');
    const { factory, seen, open } = gatedFactory();
    open();
    const { lines, logger } = logLines();
    const sc = await startSidecar(options(sock, { maxModelLen: 4 }), { logger, factory });
    await sc.loaded;
    expect(seen).toHaveLength(0);
    expect(lines.some((l) => /^warm-up skipped/.test(l))).toBe(true);
    const client = createUnixEngineClient(sock);
    expect(await client.health()).toMatchObject({ ready: true });
    await client.close();
    await sc.close(1000);
  });

  it('fails the load when the engine fails the warm-up request', async () => {
    const sock = path.join(tmp('ernie-wu-'), 'engine.sock');
    const { factory, open } = gatedFactory({ failAll: true });
    open();
    const sc = await startSidecar(options(sock), { logger: logLines().logger, factory });
    await expect(sc.loaded).rejects.toThrow(/warm-up request failed: .*kernel failure/);
    const client = createUnixEngineClient(sock, { retry: { attempts: 1 } });
    await expect(client.health()).rejects.toThrow(/failed to load: the warm-up request failed/);
    await client.close();
    await sc.close(1000);
  });
});
