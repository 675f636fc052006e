// Running engine requests for one HTTP request, with cancellation wired by lifetime:
// every run gets its own AbortController, linked to the HTTP request's signal (client disconnect) and
// aborted (unless the run already finished) by `cancel()`, which the SSE body's cancel() and every
// handler's `finally` call. The signal goes to engine.stream, and returning the iterator early reaches
// the engine too (FramedEngineClient sends ABORT), so no code path can forget an abort.
//
// `startRuns` waits for every run's `accepted` event before the handler commits to a 200: engine
// refusals (QUEUE_FULL, INVALID_REQUEST, NOT_READY…) become proper HTTP errors even for streams.

import { toHttpError } from './errors.js';
import { EngineError, type EngineClient, type EngineEvent, type SubmitRequest } from '../protocol/engine-client.js';

export type AcceptedEvent = Extract<EngineEvent, { type: 'accepted' }>;

export interface EngineRun {
  readonly req: SubmitRequest;
  readonly accepted: AcceptedEvent;
  /** Events after `accepted`. */
  readonly events: AsyncIterator<EngineEvent>;
}

export interface RunGroup {
  readonly runs: EngineRun[];
  /** All runs' events, interleaved as they arrive, tagged with the run's index. */
  events(): AsyncGenerator<{ run: number; event: EngineEvent }>;
  /** Aborts every run that has not finished. Idempotent; safe after completion. */
  cancel(): void;
}

export async function startRuns(engine: EngineClient, reqs: SubmitRequest[], httpSignal: AbortSignal | undefined): Promise<RunGroup> {
  // One controller per run, so finishing one run never signals an abort for it.
  const controllers = reqs.map(() => new AbortController());
  const finished = reqs.map(() => false);
  const abortOpen = () => controllers.forEach((ctl, i) => finished[i] || ctl.abort());
  httpSignal?.addEventListener('abort', abortOpen, { once: true });
  if (httpSignal?.aborted) abortOpen();
  // coalesce: a route does its per-event work (chunk, JSON, HTTP write) once per catch-up when behind.
  const iterators = reqs.map((req, i) => engine.stream(req, controllers[i]!.signal, { coalesce: true })[Symbol.asyncIterator]());
  let cancelled = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    httpSignal?.removeEventListener('abort', abortOpen);
    abortOpen();
    // Settle the iterators so their finally blocks run; errors there are the engine's to report.
    for (const it of iterators) void it.return?.().catch(() => undefined);
  };

  const firsts = await Promise.allSettled(iterators.map((it) => it.next()));
  const failed = firsts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    cancel();
    throw failed.reason;
  }
  const runs = firsts.map((r, i): EngineRun => {
    const first = (r as PromiseFulfilledResult<IteratorResult<EngineEvent>>).value;
    if (first.done || first.value.type !== 'accepted') {
      cancel();
      throw new EngineError('INTERNAL', 'engine stream did not start with an accepted event');
    }
    return { req: reqs[i]!, accepted: first.value, events: iterators[i]! };
  });
  const markDone = (run: number) => (finished[run] = true);
  return { runs, cancel, events: () => merge(runs, cancel, markDone) };
}

async function* merge(runs: EngineRun[], cancel: () => void, markDone: (run: number) => void): AsyncGenerator<{ run: number; event: EngineEvent }> {
  if (runs.length === 1) return yield* single(runs[0]!, cancel, markDone);
  type Pending = Promise<{ run: number; result: IteratorResult<EngineEvent> }>;
  const pull = (run: number): Pending => runs[run]!.events.next().then((result) => ({ run, result }));
  const pending = new Map<number, Pending>(runs.map((_, i) => [i, pull(i)]));
  try {
    while (pending.size > 0) {
      const { run, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(run);
        continue;
      }
      // `done` is a run's last event: don't pull past it (cancel() settles the iterator).
      if (result.value.type === 'done') {
        markDone(run);
        pending.delete(run);
      } else pending.set(run, pull(run));
      yield { run, event: result.value };
    }
  } finally {
    // Normal end: nothing left to abort. Early end (consumer stopped, error): abort the rest.
    cancel();
    for (const p of pending.values()) void p.catch(() => undefined);
  }
}

/** merge() of one run (most requests): its events as they come, without the race bookkeeping. */
async function* single(run: EngineRun, cancel: () => void, markDone: (run: number) => void): AsyncGenerator<{ run: number; event: EngineEvent }> {
  try {
    for (;;) {
      const result = await run.events.next();
      if (result.done) return;
      if (result.value.type === 'done') markDone(0);
      yield { run: 0, event: result.value };
      if (result.value.type === 'done') return;
    }
  } finally {
    cancel();
  }
}

/**
 * The frame every streamed response shares, around a route's own chunks: the usage chunk when the
 * client asked for one, an engine failure turned into an OpenAI error payload (a mid-stream error
 * event), and always the run group's cancel and the request's log line (`end(status)`), also when
 * the client goes away (the SSE body returns this generator early).
 */
export async function* streamed(
  group: RunGroup,
  chunks: AsyncGenerator<unknown, void, undefined>,
  usageChunk: (() => unknown) | null,
  end: (status?: number) => void,
): AsyncGenerator<unknown, void, undefined> {
  let status = 200;
  try {
    yield* chunks;
    if (usageChunk) yield usageChunk();
  } catch (err) {
    const e = toHttpError(err);
    status = e.status;
    yield e.body;
  } finally {
    group.cancel();
    end(status);
  }
}
