// bench:serve's cold start: fresh servers, each timed on its first request after /ready turned 200
// against the next few requests to the same server (same engine instance: no bias between engines).
import { rm } from 'node:fs/promises';
import { breakdown, readMarks, type StageRow } from './breakdown.js';
import { startServer, streamOne, type StreamCall } from './http.js';
import { median } from './stats.js';

export interface ColdStart {
  readySeconds: number;
  firstTtftMs: number;
  /** Median TTFT of the WARM_REQUESTS after the first one. */
  warmTtftMs: number;
  /** The first request's stages (ms between consecutive marks). */
  firstStages: StageRow[];
}

const WARM_REQUESTS = 5;

/** `starts` fresh servers; `call(k)` gives distinct requests. */
export async function coldStarts(dir: string, traceFile: string, starts: number, call: (k: number) => StreamCall): Promise<ColdStart[]> {
  const out: ColdStart[] = [];
  let k = 0;
  for (let s = 0; s < starts; s++) {
    await rm(traceFile, { force: true });
    const server = await startServer(dir, traceFile);
    const first = await streamOne(server.base, call(k++));
    const warm: number[] = [];
    for (let i = 0; i < WARM_REQUESTS; i++) warm.push((await streamOne(server.base, call(k++))).ttftMs);
    await server.stop();
    out.push({
      readySeconds: (server.readyAt - server.spawnedAt) / 1000,
      firstTtftMs: first.ttftMs,
      warmTtftMs: median(warm),
      firstStages: breakdown(await readMarks(traceFile), [first]).path,
    });
  }
  await rm(traceFile, { force: true });
  return out;
}
