// A tokenizer worker thread (./tokenize-pool.ts): lowers its own OS priority below the serving threads'
// (./thread-priority.ts), keeps the pool's duty cycle while requests are live (./bulk-duty.ts), loads the checkpoint's tokenizer bundle once, then answers jobs in order. Errors travel back as values (code, message, param) and become the same
// EngineError the main thread would have thrown inline.
import { parentPort, workerData } from 'node:worker_threads';
import { EngineError } from '../../protocol/engine-client.js';
import { loadTokenizerBundle } from '../tokenizer/index.js';
import { installDutyPacer } from './bulk-duty.js';
import { promptIds } from './prompt.js';
import { becomeBulkThread } from './thread-priority.js';
import type { PoolJob, PoolReply, PoolWorkerData } from './tokenize-pool.js';

const data = workerData as PoolWorkerData;
const priority = becomeBulkThread('ee-tokenize');
const bundle = await loadTokenizerBundle(data.dir, data.options);
const port = parentPort!;
const duty = installDutyPacer(data.duty);

port.on('message', (job: PoolJob) => {
  let reply: PoolReply;
  duty.begin();
  const pausesBefore = duty.pauses;
  try {
    if (job.op === 'prompt') {
      const ids = Int32Array.from(promptIds(job.prompt, bundle, data.vocabSize));
      reply = { id: job.id, ids, pauses: duty.pauses - pausesBefore };
      port.postMessage(reply, [ids.buffer]);
      return;
    }
    const r = bundle.tokenize(job.req);
    const ids = Int32Array.from(r.tokens);
    reply = { id: job.id, ids, pauses: duty.pauses - pausesBefore };
    port.postMessage(reply, [ids.buffer]);
    return;
  } catch (err) {
    const e = err as Error;
    reply = { id: job.id, error: { code: e instanceof EngineError ? e.code : null, message: e.message, param: e instanceof EngineError ? e.param : null } };
  }
  port.postMessage(reply);
});
port.postMessage({ id: 0, ready: true, priority } satisfies PoolReply);
