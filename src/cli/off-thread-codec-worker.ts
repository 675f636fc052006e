// The off-thread codec's worker (./off-thread-codec.ts): runs the whole-payload passes of large inputs
// with the very functions the serving thread would have run (parseJsonBytes, the routes' zod schemas,
// encodeMessageParts, decodeMessage), so the checks and their errors are the same; errors travel back
// as values.
// Lowers its own OS priority below the serving threads' first (../sidecar/server/thread-priority.ts).
import { parentPort } from 'node:worker_threads';
import { parseJsonBytes } from '../gateway/body.js';
import { BODY_SCHEMAS, type BodySchemaName } from '../gateway/body-schemas.js';
import { ApiError } from '../gateway/errors.js';
import { FrameError } from '../protocol/framing.js';
import { decodeMessage, encodeMessageParts, ProtocolError } from '../protocol/messages.js';
import { becomeBulkThread } from '../sidecar/server/thread-priority.js';
import { transferList, type CodecJob, type CodecReply } from './off-thread-codec.js';

becomeBulkThread('ee-codec');
const port = parentPort!;

/** A body parsed and, given a schema's name, validated: its output, or its issues as the error. */
function parse(id: number, bytes: Uint8Array, schema: BodySchemaName | undefined): CodecReply {
  const json = parseJsonBytes(bytes);
  if (!schema) return { id, json };
  const r = BODY_SCHEMAS[schema].safeParse(json);
  return r.success ? { id, json: r.data } : { id, error: { kind: 'zod', message: r.error.message }, issues: r.error.issues };
}

port.on('message', (job: CodecJob) => {
  let reply: CodecReply;
  try {
    if (job.op === 'parse') reply = parse(job.id, job.bytes, job.schema);
    else if (job.op === 'encode') {
      const parts = encodeMessageParts(job.type, job.body as never, job.maxFrameBytes);
      port.postMessage({ id: job.id, parts } satisfies CodecReply, transferList(parts));
      return;
    } else reply = { id: job.id, msg: decodeMessage({ type: job.type, payload: job.payload }) };
  } catch (err) {
    const e = err as Error;
    reply = {
      id: job.id,
      error: { kind: e instanceof ApiError ? 'api' : e instanceof ProtocolError ? 'protocol' : e instanceof FrameError ? 'frame' : 'other', message: e.message },
      ...(e instanceof ApiError ? { api: { status: e.status, code: e.code, param: e.param } } : {}),
    };
  }
  port.postMessage(reply);
});
