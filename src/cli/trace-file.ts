// The Tracer (src/protocol/trace.ts) of a Node process: process.hrtime (CLOCK_MONOTONIC, shared by
// every process of the host), marks kept in memory and appended to one file as JSON lines
// `{"id","stage","t","pid"}` when the process exits, so tracing adds no I/O to the request path.
// Bench-only: enabled by ERNIE_EDGE_TRACE_FILE (the sidecar child of `serve` inherits it and appends
// to the same file; one appendFileSync per process, so the lines never interleave mid-line).

import { appendFileSync } from 'node:fs';
import type { TraceStage, Tracer } from '../protocol/trace.js';

export interface TraceMark {
  id: string;
  stage: TraceStage;
  t: number; // ms, host-wide monotonic clock
  pid: number;
}

export const hrtimeMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** An in-memory tracer; `flush()` hands back (and forgets) what was marked. First mark per (id, stage) wins. */
export function memoryTracer(): Tracer & { flush(): TraceMark[] } {
  let marks: TraceMark[] = [];
  let seen = new Set<string>();
  return {
    now: hrtimeMs,
    mark(id, stage, at) {
      const key = `${stage}\u0000${id}`;
      if (seen.has(key)) return;
      seen.add(key);
      marks.push({ id, stage, t: at ?? hrtimeMs(), pid: process.pid });
    },
    flush() {
      const out = marks;
      marks = [];
      seen = new Set();
      return out;
    },
  };
}

/** A tracer that appends its marks to `file` at process exit. */
export function fileTracer(file: string): Tracer {
  const t = memoryTracer();
  process.once('exit', () => {
    const marks = t.flush();
    if (marks.length > 0) appendFileSync(file, marks.map((m) => JSON.stringify(m)).join('\n') + '\n');
  });
  return t;
}

/** The tracer asked for by the environment, if any. */
export function tracerFromEnv(env: NodeJS.ProcessEnv): Tracer | undefined {
  return env.ERNIE_EDGE_TRACE_FILE ? fileTracer(env.ERNIE_EDGE_TRACE_FILE) : undefined;
}
