// Per-stream flow control between the sidecar and the gateway, and delta coalescing.
//
// Credit, as HTTP/2's stream windows: the sidecar may have at most `streamWindow(n)` units of a
// request's output sent and not yet consumed by the gateway. A unit is one output token plus one per
// logprob alternative it carries, so the window bounds bytes, not only tokens. The gateway reports
// what it consumed (the HTTP response took it) as a cumulative count per stream (CREDIT frames), every
// CREDIT_REPORT_UNITS or so; when a request's outstanding units reach its window, the sidecar pauses
// its sequences in the engine (KV kept, not scheduled) and resumes them when credit comes back.
// So a client that stops reading stops its own generation within a step or two, and what its stream
// holds in the gateway and in the sidecar is bounded by the window, whatever the request asked for.
//
// Coalescing (for consumers that ask for it: StreamOptions.coalesce): when a consumer falls behind, the deltas queued for it are merged into one (text
// concatenated, token ids and logprobs appended, in order), so the layers after it (progress, SSE
// chunk, HTTP write) run once per catch-up instead of once per engine step.

import type { ChoiceDelta, EngineEvent } from './engine-client.js';
import type { EventQueue } from './event-queue.js';

type DeltaEvent = Extract<EngineEvent, { type: 'delta' }>;

/** Units a request with one choice may have outstanding (sent, not consumed): its buffer. */
export const STREAM_WINDOW_UNITS = 512;
/** The gateway reports consumption once this many units were consumed since its last report. */
export const CREDIT_REPORT_UNITS = STREAM_WINDOW_UNITS / 4;

/** A request's window: STREAM_WINDOW_UNITS per choice (each choice is its own sequence). */
export function streamWindow(n: number): number {
  return STREAM_WINDOW_UNITS * Math.max(1, n);
}

/** Flow-control units of one event: 0 for anything but a delta. */
export function eventUnits(ev: EngineEvent | { type: 'error' }): number {
  if (ev.type !== 'delta') return 0;
  let units = 0;
  for (const c of ev.choices) {
    units += c.tokenIds.length;
    if (c.logprobs) for (const lp of c.logprobs) units += lp.top.length;
  }
  return units;
}

/**
 * Appends delta `next` to delta `into` (mutated; both must be owned by the caller): per choice index,
 * text concatenated, token ids and logprobs appended, the end (finishReason, stopReason, error) taken
 * from `next`. Choices keep the order of their first appearance.
 */
export function appendDelta(into: DeltaEvent, next: DeltaEvent): void {
  for (const c of next.choices) {
    const acc = findChoice(into.choices, c.index);
    if (!acc) {
      into.choices.push(c);
      continue;
    }
    acc.text += c.text;
    for (const id of c.tokenIds) acc.tokenIds.push(id);
    if (c.logprobs) {
      if (acc.logprobs) for (const lp of c.logprobs) acc.logprobs.push(lp);
      else acc.logprobs = c.logprobs;
    }
    if (c.finishReason !== undefined) acc.finishReason = c.finishReason;
    if (c.stopReason !== undefined) acc.stopReason = c.stopReason;
    if (c.error !== undefined) acc.error = c.error;
  }
}

function findChoice(choices: ChoiceDelta[], index: number): ChoiceDelta | undefined {
  for (const c of choices) if (c.index === index) return c;
  return undefined;
}

/**
 * The next event of `queue`; when it is a delta, the deltas queued right behind it are appended to it
 * (the consumer fell behind: one event for the whole catch-up). Events are owned by the queue.
 */
export async function nextCoalesced<E extends { type: string }>(queue: EventQueue<E>, coalesce = true): Promise<E> {
  const ev = await queue.next();
  if (!coalesce || ev.type !== 'delta') return ev;
  for (let nx = queue.peek(); nx?.type === 'delta'; nx = queue.peek()) {
    queue.take();
    appendDelta(ev as unknown as DeltaEvent, nx as unknown as DeltaEvent);
  }
  return ev;
}
